"""The Python side of the librdkafka cross-language test (cross_lang.py runs it).

A kafka-python service traced by SkyWalking's Python agent (its sw_kafka plugin), reporting to
the test collector (SW_AGENT_COLLECTOR_BACKEND_SERVICES): it consumes one message of REQ_TOPIC
(group "py"; the plugin's entry span continues the sender's sw8), and answers it on REP_TOPIC.
The plugin's consumer span ends with the poll, as the Java plugin's does, so the handler
continues the message's trace itself (an entry span from the record's headers, as a Python
service would) and the reply, produced inside it, carries that trace on.

  py_peer.py BOOTSTRAP REQ_TOPIC REP_TOPIC
Runs in the venv of scripts/fetch-tools.sh (apache-skywalking, kafka-python). Exits 0 once the
reply was acknowledged by the broker, 1 when no message came within 60 s; prints "answered"
then, and stays up (its agent reporting) until stdin is closed.
"""
import sys

from skywalking import agent, config

config.init(agent_profile_active=False, agent_meter_reporter_active=False,
            agent_pvm_meter_reporter_active=False, agent_log_reporter_active=False)
agent.start()

from kafka import KafkaConsumer, KafkaProducer  # noqa: E402 (after the agent's plugins)
from skywalking.trace.carrier import Carrier  # noqa: E402
from skywalking.trace.context import get_context  # noqa: E402


def main():
    bootstrap, req, rep = sys.argv[1:4]
    consumer = KafkaConsumer(req, bootstrap_servers=bootstrap, group_id="py",
                             auto_offset_reset="earliest", consumer_timeout_ms=60000)
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    answered = False
    for msg in consumer:
        carrier = Carrier()
        for item in carrier:
            for key, value in msg.headers or []:
                if key == item.key:
                    item.val = value.decode("utf-8")
        with get_context().new_entry_span(op="py-peer/handle", carrier=carrier):
            producer.send(rep, b"reply").get(timeout=30)
        answered = True
        break
    producer.flush()
    producer.close()
    consumer.close()
    print("answered" if answered else "no message", flush=True)
    # The agent reports from its own thread while the process lives (its exit hook may not
    # send everything): stay until the test has seen the segments and closes stdin.
    sys.stdin.read()
    return 0 if answered else 1


sys.exit(main())
