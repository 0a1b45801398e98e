# Wire interop with a real Apache Kafka 4.x broker (label kafka): the protocol layer of
# libkproducer (producer/src/wire) speaks ApiVersions, Metadata and Produce v3 / newest over a
# plain socket, and kcat reads every record back byte for byte.
sw_add_unit_test(test_kafka_wire_interop SOURCES integration/test_kafka_wire_interop.c
                 LIBS kproducer_internal LABELS kafka TIMEOUT 300)
sw_kafka_test(test_kafka_wire_interop)
