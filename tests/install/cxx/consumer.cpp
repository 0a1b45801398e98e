/*
 * consumer.cpp - a C++ program outside this tree using the installed skywalking.hpp: an entry
 * span, a std::thread continuing the trace, and a span ended by an exception. Configured from
 * the environment. Exits 0 when its two segments were reported.
 */
#include <skywalking.hpp>

#include <cstdio>
#include <stdexcept>
#include <string>
#include <thread>

static void load(const std::string &what)
{
    skywalking::local_span span("load " + what);
    throw std::runtime_error("no " + what);
}

int main()
{
    int rc = sw_init(nullptr);
    if (rc != 0) {
        std::fprintf(stderr, "cxx consumer: sw_init: %s\n", sw_strerror(rc));
        return 1;
    }
    {
        skywalking::entry_span entry(std::string("GET /cxx-consumer"));
        entry.tag("consumer", "c++");
        std::thread worker(skywalking::traced("worker", [] {}));
        worker.join();
        try {
            load("config");
        } catch (const std::exception &) {
        }
    }
    sw_shutdown();
    sw_stats_t st;
    sw_stats(&st);
    std::printf("cxx consumer: finished=%llu reported=%llu\n",
                (unsigned long long)st.segments_finished, (unsigned long long)st.segments_reported);
    return st.segments_finished == 2 && st.segments_reported == 2 ? 0 : 1;
}
