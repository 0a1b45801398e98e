// profile_cxx.cpp - C++ code for test_profile.c: a request handler whose frames are C++ names,
// which the profiler's snapshots must show demangled ("slowcxx::Table::scan(int)").
#include <chrono>
#include <cstdint>

extern "C" uint64_t profile_cxx_request(int ms);

namespace slowcxx
{

struct Table {
    uint64_t state = 1;
    __attribute__((noinline)) uint64_t scan(int ms);
};

uint64_t Table::scan(int ms)
{
    auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    while (std::chrono::steady_clock::now() < end) {
        for (int i = 0; i < 10000; i++) {
            state = state * 6364136223846793005u + 1442695040888963407u;
        }
    }
    return state;
}

} // namespace slowcxx

extern "C" uint64_t profile_cxx_request(int ms)
{
    slowcxx::Table t;
    uint64_t r = t.scan(ms);
    return r + 1; // not a tail call: this frame stays on the stack
}
