/*
 * cold_bench.c - what one traced call costs the calling thread when the caches are as a real
 * program leaves them, against the same call back to back.
 *
 * In a server, the kernel's network path, the server's own code and the database client run
 * between two traced calls and push the agent's code and data out of the L1 and L2 caches:
 * plugins_bench and preload_bench print several times more per traced call than a loop of the
 * same calls costs (docs/PERFORMANCE.md). Those benchmarks are noisy (a real server, the kernel,
 * the scheduler); this one isolates the effect and repeats it exactly.
 *
 * The call is what the hiredis plugin records for a GET: an exit span with a peer, layer Cache,
 * component Redis and four tags, ended (the segment is finished, encoded and handed to the
 * consumer). It runs in four states, interleaved call by call:
 *   hot:   right after the previous call of the same state;
 *   tlb:   after calling a `ret` at the start of each of 4096 pages and reading the first byte of
 *          each of 4096 others: this evicts the address translations (the TLBs hold fewer
 *          entries) but few cache lines (page-aligned lines all fall into the same few sets; the
 *          page walks bring in 64 KiB of page-table lines), and, as a side effect, some branch
 *          target entries (4096 returns); x86-64 only, "na" elsewhere;
 *   code:  after executing 3 MiB of straight-line code (evicts the instruction caches, the L2 and
 *          the instruction TLB; x86-64 only, "na" elsewhere);
 *   cold:  after that and writing one byte per line of 4 MiB of data (evicts the data caches too).
 * In a KVM guest "tlb" can cost as much as "code" or more (docs/PERFORMANCE.md): much of a cold
 * call's cost there is address translation (each TLB miss a nested page walk), so it grows with
 * the pages of code and data a call touches, not only with its cache lines.
 * Each sample is the monotonic clock around the call minus the median of the same reads around
 * nothing in the same state (the reads after an eviction are slower too). The figures are medians:
 * a sample that the scheduler interrupted is an outlier, not a cost. consumer_ns_per_segment is
 * the agent's consumer thread's CPU (its schedstat) over the run divided by the segments; the
 * consumer runs long after the call, so its cost is the same in every state. The evictions pace the
 * calls (a few thousand per second): every segment must be reported, none dropped, or the bench
 * exits 1.
 *
 * Usage: cold_bench [--smoke] [--calls N] (default 1500 calls per state; --smoke: 100)
 * Last line: hot_call_ns= tlb_cold_call_ns= code_cold_call_ns= cold_call_ns= cold_extra_ns=
 *            consumer_ns_per_segment= cold_total_ns= calls=
 * (cold_extra_ns = cold - hot; cold_total_ns = cold + consumer)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "agent_drain.h"
#include "bench_stats.h"
#include "skywalking.h"
#include "thread_stat.h"

#if defined(__x86_64__)
/* 786432 four-byte adds, 3 MiB of code run once from start to end: more than the L2 of the
   x86-64 CPUs this runs on (1-2 MiB), so nothing of the agent's code is left there. */
uint64_t cold_bench_code_run(void);
__asm__(".pushsection .text\n"
        ".globl cold_bench_code_run\n"
        ".type cold_bench_code_run, @function\n"
        "cold_bench_code_run:\n"
        "  xor %eax, %eax\n"
        "  .rept 786432\n"
        "  add $1, %rax\n"
        "  .endr\n"
        "  ret\n"
        ".size cold_bench_code_run, .-cold_bench_code_run\n"
        ".popsection\n");
static const bool code_eviction = true;
static const uint8_t x86_ret = 0xc3;
#else
static uint64_t cold_bench_code_run(void)
{
    return 0;
}
static const bool code_eviction = false;
#endif

enum { STATES = 4, DATA_BYTES = 4 << 20, TLB_PAGES = 4096, PAGE = 4096, MAX_CALLS = 100000 };
enum { HOT, TLB, CODE, COLD };
static const char *const state_names[STATES] = {"hot", "tlb", "code", "cold"};

static volatile uint64_t sink; /* keeps the evictions from being optimized away */
static uint8_t *data_lines;
static uint8_t *tlb_code, *tlb_data; /* TLB_PAGES pages each; tlb_code NULL: no tlb state */

/* The pages of the tlb state: a `ret` at the start of each code page (mapped executable once
   written), one byte at the start of each data page. */
static void tlb_pages_map(void)
{
    size_t len = (size_t)TLB_PAGES * PAGE;
    tlb_data = calloc(len, 1);
#if defined(__x86_64__)
    uint8_t *code = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (code == MAP_FAILED) {
        return;
    }
    for (size_t i = 0; i < TLB_PAGES; i++) {
        code[i * PAGE] = x86_ret;
    }
    if (mprotect(code, len, PROT_READ | PROT_EXEC) != 0) {
        munmap(code, len);
        return;
    }
    tlb_code = code;
#endif
}

/* Whether this build can set up the state ("na" otherwise). */
static bool state_runs(int state)
{
    return state == TLB ? tlb_code != NULL : state == CODE ? code_eviction : true;
}

static void evict(int state)
{
    if (state == TLB) {
        uint64_t sum = 0;
        for (size_t i = 0; i < TLB_PAGES; i++) {
            ((void (*)(void))(void *)(tlb_code + i * PAGE))();
            sum += ((volatile uint8_t *)tlb_data)[i * PAGE];
        }
        sink = sum;
        return;
    }
    if (state >= CODE) {
        sink = cold_bench_code_run();
    }
    if (state == COLD) {
        for (size_t i = 0; i < DATA_BYTES; i += 64) {
            data_lines[i]++;
        }
    }
}

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* The calls of the hiredis plugin for GET k (preload_hiredis.c). */
static void traced_call(void)
{
    sw_exit_span_begin("Redis/GET", "127.0.0.1:6379");
    sw_span_set_layer(SW_LAYER_CACHE);
    sw_span_set_component(7);
    sw_span_tag("cache.type", "Redis");
    sw_span_tag("cache.cmd", "GET");
    sw_span_tag("cache.op", "read");
    sw_span_tag("cache.key", "k");
    sw_span_end();
}

int main(int argc, char **argv)
{
    int calls = 1500;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--smoke") == 0) {
            calls = 100;
        } else if (strcmp(argv[i], "--calls") == 0 && i + 1 < argc) {
            calls = atoi(argv[++i]);
        } else {
            fprintf(stderr, "usage: cold_bench [--smoke] [--calls N]\n");
            return 2;
        }
    }
    if (calls < 1 || calls > MAX_CALLS) {
        fprintf(stderr, "cold_bench: --calls must be 1..%d\n", MAX_CALLS);
        return 2;
    }
    data_lines = calloc(DATA_BYTES, 1);
    tlb_pages_map();
    double *samples = malloc(sizeof(double) * (size_t)calls * STATES * 2);
    if (data_lines == NULL || tlb_data == NULL || samples == NULL) {
        fprintf(stderr, "cold_bench: out of memory\n");
        return 1;
    }
    sw_config_t cfg;
    sw_config_init(&cfg);
    snprintf(cfg.file_path, sizeof cfg.file_path, "/dev/null");
    snprintf(cfg.service_name, sizeof cfg.service_name, "cold-bench");
    snprintf(cfg.instance_name, sizeof cfg.instance_name, "cold-bench-1");
    if (sw_init(&cfg) != 0) {
        fprintf(stderr, "cold_bench: sw_init failed\n");
        return 1;
    }
    /* Warm-up: the agent's first segment blocks and chunks, the consumer thread. */
    for (int i = 0; i < 200; i++) {
        traced_call();
    }
    double cons0 = 0, cons1 = 0;
    if (!agent_drained() || !thread_stat_read("sw-segment-c0", &cons0, NULL)) {
        fprintf(stderr, "cold_bench: the agent's consumer thread was not found or not drained\n");
        return 1;
    }
    sw_stats_t st0;
    sw_stats(&st0);
    /* samples[(state * 2 + traced) * calls + i] */
    for (int i = 0; i < calls; i++) {
        for (int s = 0; s < STATES; s++) {
            if (!state_runs(s)) {
                continue;
            }
            evict(s);
            double t0 = now_ns();
            __asm__ volatile("" ::: "memory");
            double t1 = now_ns();
            samples[(s * 2) * calls + i] = t1 - t0;
            evict(s);
            t0 = now_ns();
            traced_call();
            t1 = now_ns();
            samples[(s * 2 + 1) * calls + i] = t1 - t0;
        }
    }
    if (!agent_drained() || !thread_stat_read("sw-segment-c0", &cons1, NULL)) {
        fprintf(stderr, "cold_bench: the consumer did not report every segment within 10 s\n");
        return 1;
    }
    sw_stats_t st;
    sw_stats(&st);
    uint64_t segments = st.segments_finished - st0.segments_finished, states = 0;
    for (int s = 0; s < STATES; s++) {
        states += state_runs(s);
    }
    if (sw_shutdown() != 0 || st.segments_dropped != 0 || st.segments_failed != 0 ||
        segments != (uint64_t)calls * states) {
        fprintf(stderr,
                "cold_bench: %llu segments of %llu finished, %llu dropped, %llu failed: not a "
                "measurement\n",
                (unsigned long long)segments, (unsigned long long)calls * states,
                (unsigned long long)st.segments_dropped, (unsigned long long)st.segments_failed);
        return 1;
    }
    double call_ns[STATES];
    char shown[STATES][32];
    for (int s = 0; s < STATES; s++) {
        if (!state_runs(s)) {
            snprintf(shown[s], sizeof shown[s], "na");
            printf("%-4s: na\n", state_names[s]);
            continue;
        }
        double empty = bench_median(samples + (s * 2) * calls, calls);
        call_ns[s] = bench_median(samples + (s * 2 + 1) * calls, calls) - empty;
        snprintf(shown[s], sizeof shown[s], "%.0f", call_ns[s]);
        printf("%-4s: %.0f ns per traced call (clock reads %.0f ns, subtracted)\n", state_names[s],
               call_ns[s], empty);
    }
    double consumer_ns = (cons1 - cons0) / (double)segments;
    printf("consumer: %.0f ns per segment\n", consumer_ns);
    printf("hot_call_ns=%s tlb_cold_call_ns=%s code_cold_call_ns=%s cold_call_ns=%s "
           "cold_extra_ns=%.0f consumer_ns_per_segment=%.0f cold_total_ns=%.0f calls=%d\n",
           shown[HOT], shown[TLB], shown[CODE], shown[COLD], call_ns[COLD] - call_ns[HOT],
           consumer_ns, call_ns[COLD] + consumer_ns, calls);
    free(samples);
    free(data_lines);
    free(tlb_data);
    if (tlb_code != NULL) {
        munmap(tlb_code, (size_t)TLB_PAGES * PAGE);
    }
    return 0;
}
