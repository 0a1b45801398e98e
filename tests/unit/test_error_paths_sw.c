/*
 * test_error_paths_sw.c - every error skywalking.h documents, called for real: each SW_E* a
 * function's comment lists is returned by that function here. The out-of-memory and thread
 * paths run under a real address-space limit (tests/support/address_space_limit.h; skipped in
 * sanitizer builds). The agent writes to a private file (tests/support/test_agent_support.h).
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "address_space_limit.h"
#include "test_agent_support.h"

/* A valid incoming sw8 whose sample flag is 0: the entry span and its trace are not recorded. */
#define SW8_UNSAMPLED "0-dHJhY2U=-c2VnbWVudA==-3-c3Zj-aW5zdA==-L2FwaQ==-aG9zdDo4MA=="

static void config_defaults(sw_config_t *cfg, const char *path)
{
    sw_config_init(cfg);
    snprintf(cfg->file_path, sizeof cfg->file_path, "%s", path);
    snprintf(cfg->service_name, sizeof cfg->service_name, "test-service");
    snprintf(cfg->instance_name, sizeof cfg->instance_name, "test-instance");
}

Test(error_paths_sw, config_set_einval_and_econfig)
{
    sw_config_t cfg;
    sw_config_init(&cfg);
    char err[256] = "";
    cr_assert_eq(sw_config_set(NULL, "SW_AGENT_SAMPLE", "1", err, sizeof err), SW_EINVAL);
    cr_assert_eq(sw_config_set(&cfg, NULL, "1", err, sizeof err), SW_EINVAL);
    cr_assert_eq(sw_config_set(&cfg, "SW_AGENT_NAME", NULL, err, sizeof err), SW_OK,
                 "a NULL value of length 0 is the empty value");
    err[0] = '\0';
    cr_assert_eq(sw_config_set(&cfg, "SW_NO_SUCH_KEY", "1", err, sizeof err), SW_ECONFIG);
    cr_assert(strstr(err, "SW_NO_SUCH_KEY") != NULL, "errbuf '%s' names the key", err);
    cr_assert_eq(sw_config_set(&cfg, "SW_AGENT_SPAN_LIMIT", "0", err, sizeof err), SW_ECONFIG);
    cr_assert(strstr(err, "SW_AGENT_SPAN_LIMIT") != NULL, "errbuf '%s' names the key", err);
    sw_config_init(NULL); /* cannot fail */
}

Test(error_paths_sw, config_load_einval_econfig_enomem)
{
    sw_config_t cfg;
    sw_config_init(&cfg);
    char err[256] = "";
    cr_assert_eq(sw_config_load(NULL, err, sizeof err), SW_EINVAL);

    setenv("SW_AGENT_SAMPLE", "not-a-number", 1);
    cr_assert_eq(sw_config_load(&cfg, err, sizeof err), SW_ECONFIG);
    cr_assert(strstr(err, "SW_AGENT_SAMPLE") != NULL, "errbuf '%s' names the key", err);
    unsetenv("SW_AGENT_SAMPLE");

    setenv("SW_AGENT_CONFIG", "/nonexistent-dir/agent.conf", 1);
    cr_assert_eq(sw_config_load(&cfg, err, sizeof err), SW_ECONFIG, "an unreadable file");
    cr_assert(strstr(err, "SW_AGENT_CONFIG") != NULL, "errbuf '%s' names the key", err);

    if (!address_space_limit_usable()) {
        unsetenv("SW_AGENT_CONFIG");
        cr_skip_test("RLIMIT_AS and sanitizer runtimes do not mix (SW_ENOMEM not reached)");
    }
    /* The file is read into a buffer of its 1 MiB cap: more than the headroom. */
    setenv("SW_AGENT_CONFIG", "/dev/null", 1);
    address_space_limit(256u << 10);
    cr_assert_eq(sw_config_load(&cfg, err, sizeof err), SW_ENOMEM);
}

Test(error_paths_sw, init_econfig_estate_eio_enotsup)
{
    const char *path = agent_test_path();
    sw_config_t cfg;

    config_defaults(&cfg, path);
    cfg.span_limit_per_segment = 0;
    cr_assert_eq(sw_init(&cfg), SW_ECONFIG);
    cr_assert(!sw_enabled(), "the agent stays off after an error");

    config_defaults(&cfg, "/nonexistent-dir/segments.bin");
    cr_assert_eq(sw_init(&cfg), SW_EIO, "the file reporter cannot open its output");

    config_defaults(&cfg, path);
    snprintf(cfg.reporter, sizeof cfg.reporter, "carrier-pigeon");
    cr_assert_eq(sw_init(&cfg), SW_ENOTSUP);

    config_defaults(&cfg, path);
    cr_assert_eq(sw_init(&cfg), SW_OK);
    cr_assert_eq(sw_init(&cfg), SW_ESTATE, "already running");
    cr_assert_eq(sw_shutdown(), SW_OK);
    cr_assert_eq(sw_shutdown(), SW_ESTATE, "not running");
}

Test(error_paths_sw, init_enomem_when_the_queue_does_not_fit)
{
    if (!address_space_limit_usable()) {
        cr_skip_test("RLIMIT_AS and sanitizer runtimes do not mix");
    }
    sw_config_t cfg;
    config_defaults(&cfg, agent_test_path());
    cfg.buffer_channel_size = 1024;
    cfg.buffer_buffer_size = 1u << 20; /* 2^30 slots: 16 GiB, far above the headroom */
    cfg.max_segments = 64;
    address_space_limit(4u << 20);
    cr_assert_eq(sw_init(&cfg), SW_ENOMEM);
    cr_assert(!sw_enabled());
}

Test(error_paths_sw, init_ethread_when_no_thread_can_start)
{
    if (!address_space_limit_usable()) {
        cr_skip_test("RLIMIT_AS and sanitizer runtimes do not mix");
    }
    sw_config_t cfg;
    config_defaults(&cfg, agent_test_path());
    cfg.max_segments = 64;
    /* Room for the queue and the reporter, not for a thread stack (8 MiB by default). */
    address_space_limit(4u << 20);
    cr_assert_eq(sw_init(&cfg), SW_ETHREAD);
    cr_assert(!sw_enabled());
}

/* Every setter and query on the active span returns `code`: SW_ENOSPAN with no span open (the
 * agent on or off), SW_ENOTRACED on a span that is not recorded. */
static void expect_span_functions(int code)
{
    const sw_kv_t kv = {"k", "v"};
    char buf[SW_SW8_MAX];
    sw_snapshot_t snap;
    cr_expect_eq(sw_span_set_component(1), code);
    cr_expect_eq(sw_span_set_layer(SW_LAYER_HTTP), code);
    cr_expect_eq(sw_span_set_peer("p:1"), code);
    cr_expect_eq(sw_span_set_error(true), code);
    cr_expect_eq(sw_span_tag("k", "v"), code);
    cr_expect_eq(sw_span_log(&kv, 1), code);
    cr_expect_eq(sw_inject(buf, sizeof buf, NULL, 0, NULL, 0), code);
    cr_expect_str_eq(buf, "", "no sw8 to send");
    cr_expect_eq(sw_correlation_set("k", "v"), code);
    cr_expect_eq(sw_correlation_get("k", buf, sizeof buf), code);
    cr_expect_eq(sw_capture(&snap), code);
    cr_expect_eq(sw_continue(&snap), SW_EINVAL, "a snapshot that captured nothing is refused");
}

Test(error_paths_sw, span_functions_enospan_off_and_on)
{
    expect_span_functions(SW_ENOSPAN);
    agent_test_start(agent_test_path(), NULL);
    expect_span_functions(SW_ENOSPAN);
    agent_test_stop();
}

Test(error_paths_sw, span_functions_enotraced_on_an_unsampled_trace)
{
    agent_test_start(agent_test_path(), NULL);
    sw_entry_span_begin("GET /unsampled", SW8_UNSAMPLED);
    sw_exit_span_begin("call", "db:5432");
    expect_span_functions(SW_ENOTRACED);
    sw_span_end();
    sw_span_end();
    sw_stats_t st = agent_test_stop();
    cr_expect_eq(st.traces_sampled_out, 1);
}

Test(error_paths_sw, setters_einval)
{
    agent_test_start(agent_test_path(), NULL);
    sw_local_span_begin("local");
    const sw_kv_t kv = {"k", "v"};
    cr_expect_eq(sw_span_set_layer((sw_layer_t)42), SW_EINVAL);
    cr_expect_eq(sw_span_set_layer((sw_layer_t)-1), SW_EINVAL);
    cr_expect_eq(sw_span_tag(NULL, "v"), SW_EINVAL);
    cr_expect_eq(sw_span_tag("k", NULL), SW_OK, "a NULL value is an empty value");
    cr_expect_eq(sw_span_log(NULL, 1), SW_EINVAL);
    cr_expect_eq(sw_span_log(&kv, 0), SW_EINVAL);
    cr_expect_eq(sw_span_log(&kv, 65536), SW_EINVAL, "n above 65535 (kvs is not read)");
    cr_expect_eq(sw_span_set_peer(NULL), SW_OK);
    sw_span_end();
    agent_test_stop();
}

Test(error_paths_sw, inject_enotexit_and_enospace)
{
    agent_test_start(agent_test_path(), NULL);
    sw_local_span_begin("local");
    char sw8[SW_SW8_MAX], corr[SW_CORRELATION_HEADER_MAX], x[SW_SW8_X_MAX];
    cr_expect_eq(sw_inject(sw8, sizeof sw8, NULL, 0, NULL, 0), SW_ENOTEXIT);
    sw_exit_span_begin("call", "db:5432");
    cr_expect_eq(sw_correlation_set("k", "v"), SW_OK);
    char small[8];
    cr_expect_eq(sw_inject(small, sizeof small, corr, sizeof corr, x, sizeof x), SW_ENOSPACE);
    cr_expect_str_eq(small, "");
    cr_expect_str_eq(corr, "", "all three are empty after SW_ENOSPACE");
    cr_expect_str_eq(x, "");
    cr_expect_eq(sw_inject(sw8, sizeof sw8, corr, 4, NULL, 0), SW_ENOSPACE, "correlation short");
    cr_expect_eq(sw_inject(sw8, sizeof sw8, NULL, 0, x, 2), SW_ENOSPACE, "sw8-x short");
    cr_expect_eq(sw_inject(sw8, sizeof sw8, corr, sizeof corr, x, sizeof x), SW_OK);
    sw_span_end();
    sw_span_end();
    agent_test_stop();
}

Test(error_paths_sw, correlation_einval_elimit_enotfound_enospace)
{
    agent_test_start(agent_test_path(), NULL);
    sw_local_span_begin("local");
    char big[SW_CORRELATION_VALUE_MAX + 2];
    memset(big, 'v', sizeof big - 1);
    big[sizeof big - 1] = '\0'; /* 129 bytes */
    cr_expect_eq(sw_correlation_set(NULL, "v"), SW_EINVAL);
    cr_expect_eq(sw_correlation_set("", "v"), SW_EINVAL);
    cr_expect_eq(sw_correlation_set("k", big), SW_ELIMIT, "value over 128 bytes");
    cr_expect_eq(sw_correlation_set(big, "v"), SW_ELIMIT, "key over 128 bytes");
    cr_expect_eq(sw_correlation_set("a", "1"), SW_OK);
    cr_expect_eq(sw_correlation_set("b", "2"), SW_OK);
    cr_expect_eq(sw_correlation_set("c", "3"), SW_OK);
    cr_expect_eq(sw_correlation_set("d", "4"), SW_ELIMIT, "a 4th key");

    char buf[8];
    cr_expect_eq(sw_correlation_get(NULL, buf, sizeof buf), SW_EINVAL);
    cr_expect_eq(sw_correlation_get("zz", buf, sizeof buf), SW_ENOTFOUND);
    cr_expect_eq(sw_correlation_get("a", NULL, 0), SW_ENOSPACE);
    cr_expect_eq(sw_correlation_get("a", buf, 1), SW_ENOSPACE, "no room for the NUL");
    cr_expect_eq(sw_correlation_get("a", buf, sizeof buf), 1);
    cr_expect_str_eq(buf, "1");
    sw_span_end();
    agent_test_stop();
}

Test(error_paths_sw, capture_and_continue_einval_elimit)
{
    agent_test_start(agent_test_path(), NULL);
    cr_expect_eq(sw_capture(NULL), SW_EINVAL);
    cr_expect_eq(sw_continue(NULL), SW_EINVAL);
    sw_local_span_begin("parent");
    sw_snapshot_t snap;
    cr_assert_eq(sw_capture(&snap), SW_OK);
    sw_snapshot_t broken = snap;
    broken.span_id = -1;
    cr_expect_eq(sw_continue(&broken), SW_EINVAL, "not captured");
    broken = snap;
    memset(broken.trace_id, 'x', sizeof broken.trace_id); /* no NUL */
    cr_expect_eq(sw_continue(&broken), SW_EINVAL, "not a value sw_capture wrote");
    sw_span_end();

    sw_local_span_begin("child");
    int rc = SW_OK;
    int n = 0;
    while (rc == SW_OK && n < 100) {
        rc = sw_continue(&snap);
        n++;
    }
    cr_expect_eq(rc, SW_ELIMIT, "too many references: %s", sw_err_name(rc));
    cr_expect_gt(n, 1, "the first references were accepted");
    sw_span_end();
    cr_expect_eq(sw_continue(&snap), SW_ENOSPAN);
    agent_test_stop();
}

Test(error_paths_sw, functions_that_cannot_fail_accept_null)
{
    sw_stats(NULL);
    sw_set_log_level((sw_log_level_t)99);
    sw_set_log_level(SW_LOG_INFO);
    cr_expect_str_eq(sw_log_level_name((sw_log_level_t)99), "unknown");
    sw_set_log_handler(NULL, NULL);
}
