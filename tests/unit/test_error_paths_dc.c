/*
 * test_error_paths_dc.c - every error datacarrier.h documents, called for real: each DC_E* a
 * function's comment lists is returned by that function here, and so is each false of
 * dc_produce. The out-of-memory and thread paths run under a real address-space limit
 * (tests/support/address_space_limit.h; skipped in sanitizer builds).
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "address_space_limit.h"
#include "datacarrier.h"

/* The petabyte request of create_enomem_when_the_rings_do_not_fit must come back as NULL, as
 * it does from glibc, rather than stop the test as an "allocation-size-too-big" report. */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
    return "allocator_may_return_null=1";
}
const char *__tsan_default_options(void);
const char *__tsan_default_options(void)
{
    return "allocator_may_return_null=1";
}

static void consume_nothing(void *ctx, void **items, size_t count)
{
    (void)ctx;
    (void)items;
    (void)count;
}

static dc_carrier_t *carrier_new(uint32_t channels, uint32_t size)
{
    char err[256] = "";
    dc_carrier_t *c = NULL;
    int rc = dc_carrier_create("errors", channels, size, DC_STRATEGY_IF_POSSIBLE,
                               dc_partitioner_rolling(1), &c, err, sizeof err);
    cr_assert_eq(rc, DC_OK, "dc_carrier_create: %s: %s", dc_err_name(rc), err);
    return c;
}

/* A create that must fail with `code`, leave *out NULL and name `must_name` in errbuf. */
static void expect_create(int code, const char *name, uint32_t channels, uint32_t size,
                          dc_strategy_t strategy, dc_partitioner_t p, const char *must_name)
{
    char err[256] = "";
    static char not_a_carrier;
    dc_carrier_t *c = (dc_carrier_t *)(void *)&not_a_carrier;
    int rc = dc_carrier_create(name, channels, size, strategy, p, &c, err, sizeof err);
    cr_assert_eq(rc, code, "create(%u, %u): %s, expected %s", channels, size, dc_err_name(rc),
                 dc_err_name(code));
    cr_assert_null(c, "a failed dc_carrier_create leaves *out NULL");
    cr_assert(strstr(err, must_name) != NULL, "errbuf '%s' does not name '%s'", err, must_name);
}

Test(error_paths_dc, create_einval_for_each_bad_argument)
{
    dc_partitioner_t ok = dc_partitioner_rolling(1);
    dc_partitioner_t no_fn = {.partition = NULL, .state = NULL, .max_retry = 1};
    expect_create(DC_EINVAL, NULL, 1, 8, DC_STRATEGY_BLOCKING, ok, "name");
    expect_create(DC_EINVAL, "x", 0, 8, DC_STRATEGY_BLOCKING, ok, "channel_size");
    expect_create(DC_EINVAL, "x", 1, 0, DC_STRATEGY_BLOCKING, ok, "buffer_size");
    expect_create(DC_EINVAL, "x", 1, (UINT32_C(1) << 30) + 1, DC_STRATEGY_BLOCKING, ok, "maximum");
    expect_create(DC_EINVAL, "x", UINT32_MAX, UINT32_C(1) << 30, DC_STRATEGY_BLOCKING, ok,
                  "overflows");
    expect_create(DC_EINVAL, "x", 1, 8, (dc_strategy_t)7, ok, "strategy");
    expect_create(DC_EINVAL, "x", 1, 8, DC_STRATEGY_BLOCKING, no_fn, "partition");
    char err[64] = "";
    cr_assert_eq(dc_carrier_create("x", 1, 8, DC_STRATEGY_BLOCKING, ok, NULL, err, sizeof err),
                 DC_EINVAL);
    cr_assert(strstr(err, "out") != NULL, "errbuf '%s' does not name out", err);
}

Test(error_paths_dc, create_enomem_when_the_rings_do_not_fit)
{
    /* 2^16 channels of 2^30 slots: petabytes, more than any address space. */
    expect_create(DC_ENOMEM, "huge", UINT32_C(1) << 16, UINT32_C(1) << 30, DC_STRATEGY_BLOCKING,
                  dc_partitioner_rolling(1), "out of memory");
}

Test(error_paths_dc, consume_einval_and_estate)
{
    dc_carrier_t *c = carrier_new(2, 8);
    cr_assert_eq(dc_consume(NULL, consume_nothing, NULL, NULL, 1, 0), DC_EINVAL);
    cr_assert_eq(dc_consume(c, NULL, NULL, NULL, 1, 0), DC_EINVAL);
    cr_assert_eq(dc_consume(c, consume_nothing, NULL, NULL, 0, 0), DC_EINVAL);
    cr_assert_eq(dc_consume(c, consume_nothing, NULL, NULL, 3, 0), DC_EINVAL, "3 threads > 2");
    cr_assert_eq(dc_consume(c, consume_nothing, NULL, NULL, 2, 0), DC_OK);
    cr_assert_eq(dc_consume(c, consume_nothing, NULL, NULL, 1, 0), DC_ESTATE, "twice");
    cr_assert_eq(dc_carrier_shutdown(c), DC_OK);
    cr_assert_eq(dc_consume(c, consume_nothing, NULL, NULL, 1, 0), DC_ESTATE, "after shutdown");
    dc_carrier_destroy(c);
}

Test(error_paths_dc, consume_enomem_when_the_batches_do_not_fit)
{
    if (!address_space_limit_usable()) {
        cr_skip_test("RLIMIT_AS and sanitizer runtimes do not mix");
    }
    /* 2^20 slots: the consumer's batch array is 8 MiB, far above the headroom. */
    dc_carrier_t *c = carrier_new(1, UINT32_C(1) << 20);
    address_space_limit(1u << 20);
    cr_assert_eq(dc_consume(c, consume_nothing, NULL, NULL, 1, 0), DC_ENOMEM);
    dc_carrier_destroy(c);
}

Test(error_paths_dc, consume_ethread_leaves_the_carrier_usable)
{
    if (!address_space_limit_usable()) {
        cr_skip_test("RLIMIT_AS and sanitizer runtimes do not mix");
    }
    dc_carrier_t *c = carrier_new(1, 8);
    cr_assert(dc_produce(c, c), "an item stored before the failed start");
    /* The batch (a few bytes) still fits; a thread stack (8 MiB by default) does not. */
    address_space_limit(1u << 20);
    cr_assert_eq(dc_consume(c, consume_nothing, NULL, NULL, 1, 0), DC_ETHREAD);
    dc_stats_t st;
    dc_carrier_stats(c, &st);
    cr_assert_eq(st.pending, 1, "the stored item is not lost by the failed start");
    dc_carrier_destroy(c);
}

Test(error_paths_dc, shutdown_einval_and_estate)
{
    cr_assert_eq(dc_carrier_shutdown(NULL), DC_EINVAL);
    dc_carrier_t *c = carrier_new(1, 8);
    cr_assert_eq(dc_carrier_shutdown(c), DC_OK);
    cr_assert_eq(dc_carrier_shutdown(c), DC_ESTATE);
    dc_carrier_destroy(c);
}

Test(error_paths_dc, produce_false_for_each_documented_case)
{
    int item = 0;
    cr_assert(!dc_produce(NULL, &item));
    dc_carrier_t *c = carrier_new(1, 2); /* one ring of two slots, no consumer */
    cr_assert(!dc_produce(c, NULL));
    cr_assert(dc_produce(c, &item));
    cr_assert(dc_produce(c, &item));
    cr_assert(!dc_produce(c, &item), "full ring with IF_POSSIBLE: dropped");
    cr_assert_eq(dc_carrier_shutdown(c), DC_OK);
    cr_assert(!dc_produce(c, &item), "after shutdown: rejected");
    dc_stats_t st;
    dc_carrier_stats(c, &st);
    cr_assert_eq(st.dropped, 1);
    cr_assert_eq(st.rejected, 1);
    cr_assert_eq(st.produced, 2, "the NULL calls are not counted");
    dc_carrier_destroy(c);
}

Test(error_paths_dc, functions_that_cannot_fail_accept_null)
{
    dc_stats_t st;
    memset(&st, 0xff, sizeof st);
    dc_carrier_stats(NULL, &st);
    cr_assert_eq(st.produced, 0);
    cr_assert_eq(st.pending, 0);
    dc_carrier_t *c = carrier_new(1, 2);
    dc_carrier_stats(c, NULL);
    dc_carrier_destroy(c);
    dc_carrier_destroy(NULL);
}
