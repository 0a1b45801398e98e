/*
 * producer_test_util.h - helpers shared by the producer's tests (criterion): creating a
 * producer from key/value settings, counting successful deliveries, and walking the
 * "<tag>:<id>..." lines that the tests read back from a topic with kcat.
 */
#ifndef PRODUCER_TEST_UTIL_H
#define PRODUCER_TEST_UTIL_H

#include <criterion/criterion.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "core/conf.h"
#include "kproducer.h"

/* A producer for `bootstrap` with the settings of kv, a NULL-terminated list of key, value
 * pairs (kv itself may be NULL). A setting that is refused or a producer that cannot be made
 * fails the test with the producer's message. The caller owns the producer (kp_close). */
static inline kp_producer_t *producer_test_new(const char *bootstrap, const char *const *kv)
{
    char err[256];
    kp_conf_t *c = kp_conf_new();
    cr_assert_eq(kp_conf_set(c, "bootstrap.servers", bootstrap, err, sizeof(err)), 0, "%s", err);
    for (; kv && kv[0]; kv += 2) {
        cr_assert_eq(kp_conf_set(c, kv[0], kv[1], err, sizeof(err)), 0, "%s", err);
    }
    kp_producer_t *p = NULL;
    int rc = kp_producer_new(c, &p, err, sizeof(err));
    kp_conf_destroy(c);
    cr_assert_eq(rc, KP_OK, "kp_producer_new: %s: %s", kp_err_name(rc), err);
    return p;
}

/* A kp_delivery_cb_t that counts the successful deliveries in the atomic_int `opaque` points
 * to (relaxed: read after kp_flush, which orders the callbacks before its return). */
static inline void producer_test_count_ok(void *opaque, int error, int32_t partition,
                                          int64_t offset)
{
    (void)partition;
    (void)offset;
    if (error == 0) {
        atomic_fetch_add_explicit((atomic_int *)opaque, 1, memory_order_relaxed);
    }
}

/* Expects kp_conf_set(name, value) on a fresh conf to fail with KP_ECONF, a message that
 * mentions `mention`, and the conf unchanged. */
static inline void conf_expect_bad(const char *name, const char *value, const char *mention)
{
    char err[512] = "";
    kp_conf_t *conf = kp_conf_new();
    struct kp_conf before = *conf;
    int rc = kp_conf_set(conf, name, value, err, sizeof(err));
    cr_assert_eq(rc, KP_ECONF, "%s=%s must be rejected", name, value);
    cr_assert_not_null(strstr(err, mention), "error for %s=%s must mention '%s': %s", name, value,
                       mention, err);
    cr_assert_eq(memcmp(&before, conf, sizeof(before)), 0, "a failed set changed the conf");
    kp_conf_destroy(conf);
}

/* Advances *cursor (within [*cursor, end)) to the next complete line "<tag>:<id>..." and
 * stores the id, parsed as a decimal, in *id. Lines of other tags are skipped, and so is a
 * last line without '\n'. Returns false when no such line is left. */
static inline bool tagged_line_next(char **cursor, char *end, const char *tag, long *id)
{
    size_t tl = strlen(tag);
    while (*cursor < end) {
        char *line = *cursor;
        char *nl = memchr(line, '\n', (size_t)(end - line));
        if (!nl) {
            break;
        }
        *cursor = nl + 1;
        if (strncmp(line, tag, tl) != 0 || line[tl] != ':') {
            continue;
        }
        *id = strtol(line + tl + 1, NULL, 10);
        return true;
    }
    *cursor = end;
    return false;
}

/* Like tagged_line_next for lines "<offset> <tag>:<id>..." (kcat -f '%o %s\n'): also stores
 * the record's offset in *offset. */
static inline bool tagged_offset_line_next(char **cursor, char *end, const char *tag, long *id,
                                           long long *offset)
{
    size_t tl = strlen(tag);
    while (*cursor < end) {
        char *line = *cursor;
        char *nl = memchr(line, '\n', (size_t)(end - line));
        if (!nl) {
            break;
        }
        *cursor = nl + 1;
        char *rest = NULL;
        long long off = strtoll(line, &rest, 10);
        if (rest == line || *rest != ' ') {
            continue;
        }
        rest++;
        if ((size_t)(nl - rest) <= tl || strncmp(rest, tag, tl) != 0 || rest[tl] != ':') {
            continue;
        }
        *id = strtol(rest + tl + 1, NULL, 10);
        *offset = off;
        return true;
    }
    *cursor = end;
    return false;
}

#endif /* PRODUCER_TEST_UTIL_H */
