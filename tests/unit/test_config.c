/*
 * test_config.c - settings from text, files and the environment; every bad input is a clear
 * message naming the key (and the file line), and the agent then stays off.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/config.h"
#include "config/list.h"
#include "skywalking.h"

Test(config, defaults)
{
    sw_config_t c;
    sw_config_init(&c);
    cr_expect_eq(c.sample_n_per_3_secs, -1);
    cr_expect_eq(c.span_limit_per_segment, 300);
    cr_expect_eq(c.buffer_channel_size, 5);
    cr_expect_eq(c.buffer_buffer_size, 300);
    cr_expect_eq(c.buffer_consume_cycle_ms, 500);
    cr_expect_str_eq(c.file_path, "skywalking-segments.bin");
    cr_expect_eq(c.plugin_sql_body_max_length, 2048);
    cr_expect(!c.plugin_sql_parameters && c.plugin_redis_trace_key && !c.plugin_syslog);
    cr_assert_eq(sw__config_finalize(&c, NULL, 0), 0);
    cr_expect_str_eq(c.service_name, program_invocation_short_name,
                     "default service = program name, got %s", c.service_name);
    cr_expect_not_null(strchr(c.instance_name, '@'), "instance %s", c.instance_name);
    cr_expect_str_eq(c.reporter, "file");
}

Test(config, set_parses_and_validates_each_kind)
{
    sw_config_t c;
    sw_config_init(&c);
    char err[256];
    cr_assert_eq(sw_config_set(&c, "SW_AGENT_SAMPLE", "-1", err, sizeof err), 0);
    cr_assert_eq(sw_config_set(&c, "SW_AGENT_SAMPLE", "25", err, sizeof err), 0);
    cr_expect_eq(c.sample_n_per_3_secs, 25);
    cr_assert_eq(sw_config_set(&c, "SW_AGENT_SPAN_LIMIT", "1000", err, sizeof err), 0);
    cr_expect_eq(c.span_limit_per_segment, 1000);
    cr_assert_eq(sw_config_set(&c, "SW_REPORTER", "kafka", err, sizeof err), 0);
    cr_assert_eq(sw_config_set(&c, "SW_KAFKA_BOOTSTRAP_SERVERS", "a:9092,b:9092", err, sizeof err),
                 0);
    cr_expect_str_eq(c.kafka_bootstrap_servers, "a:9092,b:9092");

    struct {
        const char *key, *value, *needle;
    } bad[] = {
        {"SW_AGNT_NAME", "x", "unknown key 'SW_AGNT_NAME'"},
        {"SW_AGENT_SPAN_LIMIT", "0", "SW_AGENT_SPAN_LIMIT must be an integer in 1..10000"},
        {"SW_AGENT_SPAN_LIMIT", "12x", "got '12x'"},
        {"SW_AGENT_SPAN_LIMIT", "", "SW_AGENT_SPAN_LIMIT"},
        {"SW_AGENT_SAMPLE", "99999999999999", "SW_AGENT_SAMPLE"},
        {"SW_BUFFER_CHANNEL_SIZE", "-3", "SW_BUFFER_CHANNEL_SIZE"},
        {"SW_BUFFER_CONSUME_CYCLE_MS", "0",
         "SW_BUFFER_CONSUME_CYCLE_MS must be an integer in 1..60000"},
        {"SW_REPORTER", "smoke-signals", "SW_REPORTER must be file, kafka or grpc"},
        {"SW_PLUGIN_SQL_BODY_MAX_LENGTH", "16385",
         "SW_PLUGIN_SQL_BODY_MAX_LENGTH must be an integer in 0..16384"},
        {"SW_PLUGIN_SQL_PARAMETERS", "yes", "SW_PLUGIN_SQL_PARAMETERS must be true or false"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        sw_config_t before = c;
        err[0] = '\0';
        cr_expect_eq(sw_config_set(&c, bad[i].key, bad[i].value, err, sizeof err), SW_ECONFIG);
        cr_expect_not_null(strstr(err, bad[i].needle), "message '%s' lacks '%s'", err,
                           bad[i].needle);
        cr_expect_eq(memcmp(&before, &c, sizeof c), 0, "config changed by a failed set");
    }
    char longname[400];
    memset(longname, 'n', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    cr_expect_eq(sw_config_set(&c, "SW_AGENT_NAME", longname, err, sizeof err), SW_ECONFIG);
    cr_expect_not_null(strstr(err, "value of SW_AGENT_NAME is longer than 255 bytes"), "%s", err);
}

Test(config, file_text_with_comments_spaces_and_line_numbers)
{
    sw_config_t c;
    sw_config_init(&c);
    char err[256];
    const char *text = "# agent settings\n"
                       "\n"
                       "  SW_AGENT_NAME = orders  \r\n"
                       "SW_AGENT_SAMPLE=10\n"
                       "SW_AGENT_IGNORE_SUFFIX=.jpg,.css\n"
                       "SW_KAFKA_PRODUCER_CONFIG=acks=all\n"
                       "SW_PLUGIN_SQL_BODY_MAX_LENGTH=0\n"
                       "SW_PLUGIN_REDIS_TRACE_KEY=false\n";
    cr_assert_eq(sw__config_parse_buffer(&c, text, strlen(text), "agent.conf", err, sizeof err), 0,
                 "%s", err);
    cr_expect_str_eq(c.service_name, "orders");
    cr_expect_eq(c.sample_n_per_3_secs, 10);
    cr_expect_str_eq(c.ignore_suffix, ".jpg,.css");
    cr_expect_str_eq(c.kafka_producer_config, "acks=all", "the first '=' splits");
    cr_expect_eq(c.plugin_sql_body_max_length, 0);
    cr_expect(!c.plugin_redis_trace_key, "the preload plugins' settings are read from a file too");

    const char *unknown = "SW_AGENT_NAME=x\n# ok\nSW_AGENT_NAM=y\n";
    cr_expect_eq(
        sw__config_parse_buffer(&c, unknown, strlen(unknown), "agent.conf", err, sizeof err),
        SW_ECONFIG);
    cr_expect_str_eq(err, "agent.conf:3: unknown key 'SW_AGENT_NAM'");
    const char *noeq = "SW_AGENT_NAME\n";
    cr_expect_eq(sw__config_parse_buffer(&c, noeq, strlen(noeq), "f", err, sizeof err), SW_ECONFIG);
    cr_expect_not_null(strstr(err, "f:1: expected KEY=value"), "%s", err);
    const char *badval = "\n\nSW_AGENT_SPAN_LIMIT=lots\n";
    cr_expect_eq(sw__config_parse_buffer(&c, badval, strlen(badval), "f", err, sizeof err),
                 SW_ECONFIG);
    cr_expect_not_null(strstr(err, "f:3: SW_AGENT_SPAN_LIMIT must be an integer"), "%s", err);
    const char *nul = "SW_AGENT_NAME=a\0b\n";
    cr_expect_eq(sw__config_parse_buffer(&c, nul, 18, "f", err, sizeof err), SW_ECONFIG);
}

Test(config, environment_overrides_the_file)
{
    char path[] = "/tmp/sw-config-test-XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    FILE *f = fdopen(fd, "w");
    fputs("SW_AGENT_NAME=from-file\nSW_AGENT_SAMPLE=7\n", f);
    fclose(f);
    setenv("SW_AGENT_CONFIG", path, 1);
    setenv("SW_AGENT_NAME", "from-env", 1);
    sw_config_t c;
    sw_config_init(&c);
    char err[256] = "";
    cr_assert_eq(sw_config_load(&c, err, sizeof err), 0, "%s", err);
    cr_expect_str_eq(c.service_name, "from-env");
    cr_expect_eq(c.sample_n_per_3_secs, 7);
    setenv("SW_AGENT_SPAN_LIMIT", "many", 1);
    cr_expect_eq(sw_config_load(&c, err, sizeof err), SW_ECONFIG);
    cr_expect_not_null(strstr(err, "environment: SW_AGENT_SPAN_LIMIT"), "%s", err);
    unsetenv("SW_AGENT_SPAN_LIMIT");
    setenv("SW_AGENT_CONFIG", "/nonexistent/agent.conf", 1);
    cr_expect_eq(sw_config_load(&c, err, sizeof err), SW_ECONFIG);
    cr_expect_not_null(strstr(err, "/nonexistent/agent.conf"), "%s", err);
    unlink(path);
}

Test(config, bad_configuration_leaves_the_agent_off_and_the_host_running)
{
    setenv("SW_AGENT_SAMPLE", "often", 1);
    cr_expect_eq(sw_init(NULL), SW_ECONFIG);
    cr_expect(!sw_enabled());
    sw_local_span_begin("still fine");
    cr_expect_eq(sw_span_tag("k", "v"), SW_ENOSPAN);
    sw_span_end();
    unsetenv("SW_AGENT_SAMPLE");

    sw_config_t c;
    sw_config_init(&c);
    snprintf(c.file_path, sizeof c.file_path, "/nonexistent-dir/segments.bin");
    cr_expect_eq(sw_init(&c), SW_EIO);
    cr_expect(!sw_enabled());
    sw_config_init(&c);
    snprintf(c.reporter, sizeof c.reporter, "grpc");
    cr_expect_eq(sw_init(&c), SW_ECONFIG,
                 "the gRPC reporter needs SW_AGENT_COLLECTOR_BACKEND_SERVICES");
    cr_expect(!sw_enabled());
    sw_config_init(&c);
    c.span_limit_per_segment = 0;
    cr_expect_eq(sw_init(&c), SW_ECONFIG);
    cr_expect(!sw_enabled());
}

/* A value set in the struct outside the range the setting documents is refused, with the
   setting's name, as the same value from the environment is: 0 is not "the default". */
Test(config, struct_values_out_of_range_are_refused_by_name)
{
    const uint32_t cycles[] = {0, 60001};
    for (size_t i = 0; i < sizeof cycles / sizeof *cycles; i++) {
        sw_config_t c;
        sw_config_init(&c);
        c.buffer_consume_cycle_ms = cycles[i];
        char err[256] = "";
        cr_expect_eq(sw__config_finalize(&c, err, sizeof err), SW_ECONFIG, "%u ms accepted",
                     cycles[i]);
        cr_expect_not_null(strstr(err, "SW_BUFFER_CONSUME_CYCLE_MS must be in 1..60000"), "%s",
                           err);
    }
    sw_config_t c;
    sw_config_init(&c);
    c.buffer_consume_cycle_ms = 1;
    cr_expect_eq(sw__config_finalize(&c, NULL, 0), 0, "1 ms is in range");
}

/* Collects the items of `text` as "[item]" strings, through sw__list_next or, with `all`,
   sw__list_item_next. */
static void list_collect(const char *text, bool all, char *out, size_t cap)
{
    const char *cursor = text;
    size_t n, used = 0;
    out[0] = '\0';
    for (;;) {
        const char *item = all ? sw__list_item_next(&cursor, &n) : sw__list_next(&cursor, &n);
        if (item == NULL) {
            break;
        }
        used += (size_t)snprintf(out + used, cap - used, "[%.*s]", (int)n, item);
        cr_assert_lt(used, cap, "collected items overflow the test buffer");
    }
    cr_expect_null(cursor, "the cursor must be NULL after the last item of '%s'", text);
}

Test(config_list, non_empty_items_are_trimmed_and_empty_ones_skipped)
{
    char got[256];
    list_collect(".jpg,.css", false, got, sizeof got);
    cr_expect_str_eq(got, "[.jpg][.css]");
    list_collect("  a , \tb\t,,c d ,", false, got, sizeof got);
    cr_expect_str_eq(got, "[a][b][c d]", "inner spaces stay, ends are trimmed: %s", got);
    list_collect(", ,\t,", false, got, sizeof got);
    cr_expect_str_eq(got, "", "only separators: no item, got %s", got);
    list_collect("", false, got, sizeof got);
    cr_expect_str_eq(got, "");
    list_collect("single", false, got, sizeof got);
    cr_expect_str_eq(got, "[single]");
}

Test(config_list, every_item_including_empty_ones)
{
    char got[256];
    list_collect("a:1,,b:2", true, got, sizeof got);
    cr_expect_str_eq(got, "[a:1][][b:2]");
    list_collect("", true, got, sizeof got);
    cr_expect_str_eq(got, "[]", "an empty text is one empty item, got %s", got);
    list_collect(" x ,", true, got, sizeof got);
    cr_expect_str_eq(got, "[x][]", "a trailing comma gives an empty last item, got %s", got);
}

Test(config_list, null_cursor_is_an_empty_list_and_items_point_into_the_text)
{
    const char *cursor = NULL;
    size_t n = 99;
    cr_expect_null(sw__list_next(&cursor, &n));
    cr_expect_null(sw__list_item_next(&cursor, &n));
    const char *text = "k = v , w";
    cursor = text;
    const char *item = sw__list_next(&cursor, &n);
    cr_assert_eq(item, text, "the first item starts the text");
    cr_expect_eq(n, 5u, "'k = v' is 5 bytes, got %zu", n);
    const char *key = item;
    size_t kn = 1;
    const char *val = item + 3;
    size_t vn = 2;
    sw__text_trim(&key, &kn);
    sw__text_trim(&val, &vn);
    cr_expect_eq(kn, 1u);
    cr_expect_eq(vn, 1u);
    cr_expect_eq(*val, 'v');
    item = sw__list_next(&cursor, &n);
    cr_assert_not_null(item);
    cr_expect_eq(item, text + 8);
    cr_expect_eq(n, 1u);
}

Test(config_list, ignore_suffix_list_with_blanks_and_empties_configures_the_agent)
{
    sw_config_t c;
    sw_config_init(&c);
    char err[256] = "";
    cr_assert_eq(sw_config_set(&c, "SW_AGENT_IGNORE_SUFFIX", " .jpg ,, .css\t", err, sizeof err), 0,
                 "%s", err);
    cr_assert_eq(sw_config_set(&c, "SW_REPORTER_FILE_PATH", "/dev/null", err, sizeof err), 0);
    cr_assert_eq(sw_init(&c), 0);
    sw_entry_span_begin("GET /logo.jpg", NULL);
    sw_span_end();
    sw_entry_span_begin("GET /site.css", NULL);
    sw_span_end();
    sw_entry_span_begin("GET /index.html", NULL);
    sw_span_end();
    cr_assert_eq(sw_shutdown(), 0);
    sw_stats_t st;
    sw_stats(&st);
    cr_expect_eq(st.traces_ignored, 2, "both trimmed suffixes match, got %llu ignored",
                 (unsigned long long)st.traces_ignored);
    cr_expect_eq(st.segments_finished, 1);

    char many[600] = "";
    for (int i = 0; i < 40; i++) {
        snprintf(many + strlen(many), sizeof many - strlen(many), ".s%d,", i);
    }
    cr_assert_eq(sw_config_set(&c, "SW_AGENT_IGNORE_SUFFIX", many, err, sizeof err), 0, "%s", err);
    cr_expect_eq(sw_init(&c), SW_ECONFIG, "40 suffixes are more than the table holds");
    cr_expect(!sw_enabled());
}
