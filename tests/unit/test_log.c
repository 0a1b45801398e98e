/*
 * test_log.c - the agent's one logging path: level filter, the host's handler, the default
 * one-line stderr output, rate-limited repeats, and escaping of outside text.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log/log.h"
#include "skywalking.h"
#include "test_util.h"

#define CAPTURE_MAX 64

typedef struct capture {
    int count;
    sw_log_level_t levels[CAPTURE_MAX];
    char lines[CAPTURE_MAX][SW__LOG_LINE_MAX + 64];
} capture_t;

static void capture_handler(sw_log_level_t level, const char *message, void *opaque)
{
    capture_t *c = opaque;
    if (c->count < CAPTURE_MAX) {
        c->levels[c->count] = level;
        snprintf(c->lines[c->count], sizeof c->lines[0], "%s", message);
    }
    c->count++;
}

static capture_t cap;

static void setup(void)
{
    memset(&cap, 0, sizeof cap);
    sw__log_reset(0);
    sw_set_log_level(SW_LOG_INFO);
    sw_set_log_handler(capture_handler, &cap);
}

static void teardown(void)
{
    sw_set_log_handler(NULL, NULL);
}

TestSuite(log, .init = setup, .fini = teardown);

Test(log, handler_gets_messages_and_level_filters)
{
    sw__log(SW_LOG_ERROR, "first %d", 1);
    sw__log(SW_LOG_DEBUG, "not shown %d", 2); /* below the default level */
    cr_assert_eq(cap.count, 1);
    cr_expect_str_eq(cap.lines[0], "first 1");
    cr_expect_eq(cap.levels[0], SW_LOG_ERROR);
    sw_set_log_level(SW_LOG_DEBUG);
    sw__log(SW_LOG_DEBUG, "now shown %d", 3);
    cr_assert_eq(cap.count, 2);
    sw_set_log_level(SW_LOG_ERROR);
    sw__log(SW_LOG_WARN, "a warning %d", 4);
    cr_expect_eq(cap.count, 2);
    cr_expect_str_eq(sw_log_level_name(SW_LOG_WARN), "warn");
}

Test(log, message_is_one_line_and_bounded)
{
    char big[3 * SW__LOG_LINE_MAX];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    sw__log(SW_LOG_WARN, "x\ny%s", big);
    cr_assert_eq(cap.count, 1);
    cr_expect_null(strchr(cap.lines[0], '\n'));
    cr_expect_eq(strlen(cap.lines[0]), SW__LOG_LINE_MAX);
    cr_expect_eq(strcmp(cap.lines[0] + SW__LOG_LINE_MAX - 3, "..."), 0);
}

Test(log, repeats_are_rate_limited_and_counted)
{
    sw__log_reset(100);
    for (int i = 0; i < 50; i++) {
        sw__log(SW_LOG_WARN, "the same place %d", i);
    }
    cr_assert_eq(cap.count, SW__LOG_BURST, "%d lines passed", cap.count);
    sw__log(SW_LOG_WARN, "another place"); /* a different call site is not limited */
    cr_assert_eq(cap.count, SW__LOG_BURST + 1);
    /* After the window the next line from the first site says how many were dropped. */
    double deadline = now_s() + 5;
    bool noted = false;
    while (!noted && now_s() < deadline) {
        int before = cap.count;
        sw__log(SW_LOG_WARN, "the same place %d", -1);
        noted = cap.count > before &&
                strstr(cap.lines[cap.count - 1], "similar messages suppressed") != NULL;
    }
    cr_assert(noted, "no suppression note within 5 s");
    cr_expect_gt(atoi(strstr(cap.lines[cap.count - 1], "(") + 1), 44);
}

Test(log, default_handler_writes_one_line_to_stderr)
{
    sw_set_log_handler(NULL, NULL);
    char path[] = "/tmp/sw_test_log_XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    int saved = dup(STDERR_FILENO);
    dup2(fd, STDERR_FILENO);
    sw__log(SW_LOG_ERROR, "bad setting %s", "SW_X");
    dup2(saved, STDERR_FILENO);
    close(saved);
    char buf[256] = "";
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    close(fd);
    unlink(path);
    cr_assert_gt(n, 0);
    cr_expect_str_eq(buf, "skywalking-c error: bad setting SW_X\n");
}

Test(log, escape_makes_outside_text_printable_and_caps_it)
{
    char out[SW__LOG_ESCAPED_SIZE];
    cr_expect_str_eq(sw__log_escape(out, sizeof out, "a\nb\x1b[31m\\\x7f\xc3", 11),
                     "a\\nb\\x1b[31m\\\\\\x7f\\xc3");
    cr_expect_str_eq(sw__log_escape(out, sizeof out, NULL, 0), "(null)");
    char text[5000];
    memset(text, '\n', sizeof text);
    sw__log_escape(out, sizeof out, text, sizeof text);
    cr_expect_leq(strlen(out), SW__LOG_TEXT_MAX);
    cr_expect_eq(strcmp(out + strlen(out) - 3, "..."), 0);
    cr_expect_eq(strncmp(out, "\\n\\n", 4), 0); /* cut at a whole escape */
    cr_expect_eq(strlen(out) % 2, 1);           /* 2-byte escapes, then "..." */
    char small[8];
    cr_expect_str_eq(sw__log_escape(small, sizeof small, "1234567", 7), "1234567");
    cr_expect_str_eq(sw__log_escape(small, sizeof small, "12345678", 8), "1234...");
}

Test(log, sw_init_failure_goes_to_the_handler)
{
    sw_config_t c;
    sw_config_init(&c);
    c.span_limit_per_segment = 0;
    cr_assert_eq(sw_init(&c), SW_ECONFIG);
    cr_assert_eq(cap.count, 1);
    cr_expect_eq(cap.levels[0], SW_LOG_ERROR);
    cr_expect_not_null(strstr(cap.lines[0], "SW_AGENT_SPAN_LIMIT"), "%s", cap.lines[0]);
}
