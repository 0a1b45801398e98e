/*
 * test_error_codes.c - the three error tables (DC_ERRNO_MAP in datacarrier.h, KP_ERRNO_MAP in
 * kproducer.h, SW_ERRNO_MAP in skywalking.h): every code lies in its library's range
 * (-101..-199, -201..-299, -301..-399), so no number is taken twice, and every code has its
 * own name and a message from each library's *_err_name / *_strerror, and from the agent's
 * sw_err_name / sw_strerror, which also name the DC_E* and KP_E* codes.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "datacarrier.h"
#include "kproducer.h"
#include "skywalking.h"

typedef struct code {
    int value;
    const char *name; /* as the table spells it, with its prefix */
} code_t;

#define AS_DC(name, value, text) {value, "DC_E" #name},
#define AS_KP(name, value, text) {value, "KP_E" #name},
#define AS_SW(name, value, text) {value, "SW_E" #name},
static const code_t dc_codes[] = {DC_ERRNO_MAP(AS_DC)};
static const code_t kp_codes[] = {KP_ERRNO_MAP(AS_KP)};
static const code_t sw_codes[] = {SW_ERRNO_MAP(AS_SW)};
#undef AS_DC
#undef AS_KP
#undef AS_SW

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

typedef struct library {
    const char *prefix;
    const code_t *codes;
    size_t n;
    int hundreds; /* the range: -(hundreds * 100 + 1) .. -(hundreds * 100 + 99) */
    const char *(*err_name)(int);
    const char *(*strerror)(int);
} library_t;

static const library_t libraries[] = {
    {"DC", dc_codes, COUNT(dc_codes), 1, dc_err_name, dc_strerror},
    {"KP", kp_codes, COUNT(kp_codes), 2, kp_err_name, kp_strerror},
    {"SW", sw_codes, COUNT(sw_codes), 3, sw_err_name, sw_strerror},
};

Test(error_codes, every_code_lies_in_its_library_range_once)
{
    for (size_t l = 0; l < COUNT(libraries); l++) {
        const library_t *lib = &libraries[l];
        int lo = -(lib->hundreds * 100 + 99), hi = -(lib->hundreds * 100 + 1);
        cr_assert_gt(lib->n, 0);
        for (size_t i = 0; i < lib->n; i++) {
            int v = lib->codes[i].value;
            cr_expect(v >= lo && v <= hi, "%s = %d is outside %d..%d", lib->codes[i].name, v, lo,
                      hi);
            for (size_t j = 0; j < i; j++) {
                cr_expect_neq(v, lib->codes[j].value, "%s and %s share %d", lib->codes[i].name,
                              lib->codes[j].name, v);
            }
        }
    }
    /* Disjoint ranges make a collision across libraries impossible; check it directly too. */
    for (size_t a = 0; a < COUNT(libraries); a++) {
        for (size_t b = a + 1; b < COUNT(libraries); b++) {
            for (size_t i = 0; i < libraries[a].n; i++) {
                for (size_t j = 0; j < libraries[b].n; j++) {
                    cr_expect_neq(libraries[a].codes[i].value, libraries[b].codes[j].value,
                                  "%s and %s collide", libraries[a].codes[i].name,
                                  libraries[b].codes[j].name);
                }
            }
        }
    }
}

Test(error_codes, every_code_has_its_name_and_a_message)
{
    for (size_t l = 0; l < COUNT(libraries); l++) {
        const library_t *lib = &libraries[l];
        for (size_t i = 0; i < lib->n; i++) {
            const code_t *c = &lib->codes[i];
            cr_expect_str_eq(lib->err_name(c->value), c->name);
            const char *msg = lib->strerror(c->value);
            cr_expect(msg != NULL && msg[0] != '\0' && strcmp(msg, "unknown error") != 0,
                      "%s has no message", c->name);
            /* The agent links both libraries and names their codes too. */
            cr_expect_str_eq(sw_err_name(c->value), c->name);
            cr_expect_str_eq(sw_strerror(c->value), msg);
        }
    }
}

Test(error_codes, zero_is_ok_everywhere)
{
    cr_expect_eq(DC_OK, 0);
    cr_expect_eq(KP_OK, 0);
    cr_expect_eq(SW_OK, 0);
    cr_expect_str_eq(dc_err_name(0), "DC_OK");
    cr_expect_str_eq(kp_err_name(0), "KP_OK");
    cr_expect_str_eq(sw_err_name(0), "SW_OK");
    cr_expect_str_eq(dc_strerror(0), "success");
    cr_expect_str_eq(kp_strerror(0), "success");
    cr_expect_str_eq(sw_strerror(0), "success");
}

Test(error_codes, numbers_outside_the_tables_are_unknown)
{
    const int others[] = {-1, -100, -199, -299, -399, -400, 1, 12345};
    for (size_t i = 0; i < COUNT(others); i++) {
        for (size_t l = 0; l < COUNT(libraries); l++) {
            cr_expect_str_eq(libraries[l].err_name(others[i]), "unknown", "%s_err_name(%d)",
                             libraries[l].prefix, others[i]);
            cr_expect_str_eq(libraries[l].strerror(others[i]), "unknown error", "%s_strerror(%d)",
                             libraries[l].prefix, others[i]);
        }
    }
    /* A code of one library is unknown to another's own functions. */
    cr_expect_str_eq(dc_err_name(KP_EINVAL), "unknown");
    cr_expect_str_eq(kp_err_name(SW_EINVAL), "unknown");
    cr_expect_str_eq(kp_err_name(DC_EINVAL), "unknown");
}
