// rk_cpp.cpp - an ordinary librdkafka++ (C++ API) program for the librdkafka span tests: the
// C++ library calls librdkafka's C functions through its dynamic linkage, where the preload's
// interposers sit.
//
//   rk_cpp BOOTSTRAP TOPIC COUNT
// Produces COUNT messages to TOPIC (created beforehand, e.g. by rk_client) with
// RdKafka::Producer::produce and an RdKafka::Headers holding app=1, then reads them back with an
// RdKafka::KafkaConsumer (group "cpp", from the beginning) and prints "hdr <n> <name>" for each
// header of each. Every wait is bounded (30 s); exits 0 once COUNT messages came back.
#include <librdkafka/rdkafkacpp.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

namespace
{

int fail(const std::string &what)
{
    std::fprintf(stderr, "rk_cpp: %s\n", what.c_str());
    return 1;
}

} // namespace

int main(int argc, char **argv)
{
    if (argc != 4) {
        return fail("usage: rk_cpp BOOTSTRAP TOPIC COUNT");
    }
    const std::string bootstrap = argv[1], topic = argv[2];
    const int count = std::atoi(argv[3]);
    std::string err;
    std::unique_ptr<RdKafka::Conf> pconf(RdKafka::Conf::create(RdKafka::Conf::CONF_GLOBAL));
    if (pconf->set("bootstrap.servers", bootstrap, err) != RdKafka::Conf::CONF_OK) {
        return fail(err);
    }
    std::unique_ptr<RdKafka::Producer> producer(RdKafka::Producer::create(pconf.get(), err));
    if (!producer) {
        return fail(err);
    }
    for (int i = 0; i < count; i++) {
        RdKafka::Headers *headers = RdKafka::Headers::create();
        headers->add("app", "1");
        std::string value = "m" + std::to_string(i);
        RdKafka::ErrorCode e = producer->produce(
            topic, RdKafka::Topic::PARTITION_UA, RdKafka::Producer::RK_MSG_COPY,
            const_cast<char *>(value.data()), value.size(), nullptr, 0, 0, headers, nullptr);
        if (e != RdKafka::ERR_NO_ERROR) {
            delete headers; // still ours on failure
            return fail("produce: " + RdKafka::err2str(e));
        }
    }
    if (producer->flush(30000) != RdKafka::ERR_NO_ERROR) {
        return fail("flush");
    }

    std::unique_ptr<RdKafka::Conf> cconf(RdKafka::Conf::create(RdKafka::Conf::CONF_GLOBAL));
    if (cconf->set("bootstrap.servers", bootstrap, err) != RdKafka::Conf::CONF_OK ||
        cconf->set("group.id", "cpp", err) != RdKafka::Conf::CONF_OK ||
        cconf->set("auto.offset.reset", "earliest", err) != RdKafka::Conf::CONF_OK) {
        return fail(err);
    }
    std::unique_ptr<RdKafka::KafkaConsumer> consumer(
        RdKafka::KafkaConsumer::create(cconf.get(), err));
    if (!consumer || consumer->subscribe({topic}) != RdKafka::ERR_NO_ERROR) {
        return fail("consumer: " + err);
    }
    int received = 0;
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (received < count && std::chrono::steady_clock::now() < end) {
        std::unique_ptr<RdKafka::Message> m(consumer->consume(500));
        if (m->err() != RdKafka::ERR_NO_ERROR) {
            continue;
        }
        if (RdKafka::Headers *h = m->headers()) {
            for (const RdKafka::Headers::Header &hd : h->get_all()) {
                std::printf("hdr %d %s\n", received, hd.key().c_str());
            }
        }
        received++;
    }
    consumer->close();
    return received == count ? 0 : fail("not every message came back");
}
