/*
 * utf8_valid.h - an oracle for the tests: whether bytes are well-formed UTF-8, written from
 * the Unicode Standard's table of well-formed byte sequences (Table 3-7) independently of the
 * agent's cleaner (agent/src/util/utf8.c), so that a test of the cleaner does not check it with
 * itself. protobuf-c does not check UTF-8 when it decodes; these tests do, as the OAP's
 * protobuf-java and upb do.
 */
#ifndef UTF8_VALID_H
#define UTF8_VALID_H

#include <stdbool.h>
#include <stddef.h>

/* Table 3-7: the first byte and the range of the second byte; further bytes are 80..BF. */
static inline bool test_utf8_valid(const char *text, size_t len)
{
    const unsigned char *s = (const unsigned char *)text;
    size_t i = 0;
    while (i < len) {
        unsigned char b = s[i];
        size_t n;
        unsigned char lo = 0x80, hi = 0xbf;
        if (b <= 0x7f) {
            i++;
            continue;
        } else if (b >= 0xc2 && b <= 0xdf) {
            n = 2;
        } else if (b == 0xe0) {
            n = 3, lo = 0xa0;
        } else if ((b >= 0xe1 && b <= 0xec) || b == 0xee || b == 0xef) {
            n = 3;
        } else if (b == 0xed) {
            n = 3, hi = 0x9f;
        } else if (b == 0xf0) {
            n = 4, lo = 0x90;
        } else if (b >= 0xf1 && b <= 0xf3) {
            n = 4;
        } else if (b == 0xf4) {
            n = 4, hi = 0x8f;
        } else {
            return false;
        }
        if (len - i < n || s[i + 1] < lo || s[i + 1] > hi) {
            return false;
        }
        for (size_t k = 2; k < n; k++) {
            if (s[i + k] < 0x80 || s[i + k] > 0xbf) {
                return false;
            }
        }
        i += n;
    }
    return true;
}

/* The same for a NUL-terminated string (NULL counts as valid: an absent field). */
static inline bool test_utf8_valid_str(const char *s)
{
    size_t n = 0;
    if (s == NULL) {
        return true;
    }
    while (s[n] != '\0') {
        n++;
    }
    return test_utf8_valid(s, n);
}

#endif /* UTF8_VALID_H */
