/*
 * test_span_alloc.c - no allocation per span in steady state.
 *
 * This binary replaces malloc/calloc/realloc/aligned_alloc/free with counters that forward to
 * glibc's __libc_* functions; the counter is thread-local, so only the producing (test) thread's
 * own allocations are counted (its spans, and the encoding of its segments into chunks), not the
 * consumer thread's. Under ASan or TSan the
 * sanitizer owns malloc, so the interposer is not built and the counting test skips; the pool
 * reuse test (no new segment blocks) runs everywhere.
 */
#include <sched.h>
#include <time.h>

#include "agent_internal.h"
#include "test_agent_support.h"
#include "test_util.h"

static _Thread_local unsigned long allocations;

enum { WARM_UP_SEGMENTS = 100 };

#if !TEST_SANITIZED
void *__libc_malloc(size_t);
void *__libc_calloc(size_t, size_t);
void *__libc_realloc(void *, size_t);
void *__libc_memalign(size_t, size_t);
void __libc_free(void *);

void *malloc(size_t n)
{
    allocations++;
    return __libc_malloc(n);
}

void *calloc(size_t a, size_t b)
{
    allocations++;
    return __libc_calloc(a, b);
}

void *realloc(void *p, size_t n)
{
    allocations++;
    return __libc_realloc(p, n);
}

void *aligned_alloc(size_t alignment, size_t n)
{
    allocations++;
    return __libc_memalign(alignment, n);
}

void free(void *p)
{
    __libc_free(p);
}
#endif

/* Waits (bounded by 10 s) until the consumer reported `target` segments (their blocks went back
   to this thread's cache when each was finished; their chunk records are released right after
   the report). */
static void wait_reported(uint64_t target)
{
    sw_stats_t st;
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (;;) {
        sw_stats(&st);
        if (st.segments_reported >= target) {
            return;
        }
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec - start.tv_sec > 10) {
            break;
        }
        sched_yield();
    }
    cr_assert_fail("the consumer reported %llu of %llu segments within 10 s",
                   (unsigned long long)st.segments_reported, (unsigned long long)target);
}

#if !TEST_SANITIZED
static void big_segments(sw_config_t *cfg)
{
    cfg->span_limit_per_segment = 10000;
    cfg->segment_arena_bytes = 1 << 20;
}
#endif

/* 10k span pairs (an entry and 9999 locals with a tag) recorded in one segment, from a
   recycled block: begin/end/tag never allocate, nor does the end that finishes the segment (a
   segment this big goes to the consumer as its block: encode/segment_item.h). */
Test(span_alloc, ten_thousand_span_pairs_allocate_nothing)
{
#if TEST_SANITIZED
    cr_skip_test("the sanitizer interposes malloc; allocation counting runs in the default "
                 "preset only");
#else
    agent_test_start(agent_test_path(), big_segments);
    sw_entry_span_begin("warm-up", NULL); /* joins the run, allocates the first block */
    sw_local_span_begin("local");
    sw_span_end();
    sw_span_end();
    wait_reported(1); /* the warm-up segment is out */
    unsigned long probe = allocations;
    void *volatile p = malloc(16);
    free(p);
    cr_assert_eq(allocations, probe + 1, "the interposer does not count");
    unsigned long before = allocations;
    sw_entry_span_begin("root", NULL);
    for (int i = 0; i < 9999; i++) {
        sw_local_span_begin("local");
        sw_span_tag("k", "v");
        sw_span_end();
    }
    unsigned long during = allocations - before;
    before = allocations;
    sw_span_end();
    unsigned long finish = allocations - before;
    sw_stats_t st = agent_test_stop();
    cr_expect_eq(during, 0, "%lu allocations in 10k span pairs", during);
    cr_expect_eq(finish, 0, "%lu allocations when the 10k-span segment was finished", finish);
    cr_expect_eq(st.spans_limited, 0, "all 10k spans were recorded");
    cr_expect_eq(st.segments_reported, 2);
#endif
}

/* One segment of 10 spans (10 span pairs with tags). */
static void one_segment(void)
{
    sw_entry_span_begin("GET /x", NULL);
    sw_span_tag("http.method", "GET");
    for (int i = 0; i < 9; i++) {
        sw_exit_span_begin("call", "peer:1");
        sw_span_tag("k", "v");
        sw_span_end();
    }
    sw_span_end();
}

/* 1000 segments (10k span pairs), each reported before the next starts: the steady state of a
   service whose consumer keeps up. The warm-up fills more than two chunks (a segment encodes to
   about 400 bytes), so the chunks the thread alternates between exist before the count. */
static void steady_state(unsigned long *allocs, uint64_t *new_blocks)
{
    agent_test_start(agent_test_path(), NULL);
    for (int s = 1; s <= WARM_UP_SEGMENTS; s++) {
        one_segment();
        wait_reported((uint64_t)s);
    }
    uint64_t blocks = sw__agent_blocks_allocated();
    uint64_t chunks = sw__agent_chunk_units();
    unsigned long spans_allocs = 0;
    for (int s = WARM_UP_SEGMENTS + 1; s <= WARM_UP_SEGMENTS + 1000; s++) {
        unsigned long before = allocations;
        one_segment();
        spans_allocs += allocations - before; /* the wait's own calls are not span work */
        wait_reported((uint64_t)s);
    }
    *allocs = spans_allocs;
    *new_blocks = sw__agent_blocks_allocated() - blocks;
    uint64_t new_chunks = sw__agent_chunk_units() - chunks;
    sw_stats_t st = agent_test_stop();
    cr_expect_eq(st.segments_reported, WARM_UP_SEGMENTS + 1000);
    cr_expect_eq(new_chunks, 0, "%llu new chunk units after warm-up",
                 (unsigned long long)new_chunks);
}

Test(span_alloc, recycled_segments_allocate_nothing_in_steady_state)
{
#if TEST_SANITIZED
    cr_skip_test("the sanitizer interposes malloc; allocation counting runs in the default "
                 "preset only");
#else
    unsigned long allocs;
    uint64_t blocks;
    steady_state(&allocs, &blocks);
    cr_expect_eq(allocs, 0, "%lu allocations on the producing thread", allocs);
    cr_expect_eq(blocks, 0, "%llu new segment blocks", (unsigned long long)blocks);
#endif
}

Test(span_alloc, segment_blocks_are_reused_not_reallocated)
{
    unsigned long allocs;
    uint64_t blocks;
    steady_state(&allocs, &blocks);
    cr_expect_eq(blocks, 0, "%llu new segment blocks after warm-up", (unsigned long long)blocks);
}
