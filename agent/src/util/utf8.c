/*
 * utf8.c - the cleaner of strings for protobuf `string` fields. See utf8.h.
 */
#include "utf8.h"

/* The length of the valid UTF-8 sequence at s[0..len), or 0 when it is not one (RFC 3629:
   no overlong forms, no surrogates, nothing above U+10FFFF). */
static size_t sequence(const unsigned char *s, size_t len)
{
    unsigned c = s[0];
    size_t n;
    unsigned min;
    if (c < 0x80) {
        return 1;
    } else if (c >= 0xc2 && c <= 0xdf) {
        n = 2, min = 0x80;
    } else if (c >= 0xe0 && c <= 0xef) {
        n = 3, min = 0x800;
    } else if (c >= 0xf0 && c <= 0xf4) {
        n = 4, min = 0x10000;
    } else {
        return 0;
    }
    if (len < n) {
        return 0;
    }
    unsigned cp = c & (0x7f >> n);
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80) {
            return 0;
        }
        cp = cp << 6 | (s[i] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
        return 0;
    }
    return n;
}

size_t sw__utf8_cut(const char *text, size_t len, size_t max)
{
    const unsigned char *s = (const unsigned char *)text;
    if (len <= max) {
        return len;
    }
    /* s[max] is the first byte dropped: when it continues a sequence, drop the rest of that
       sequence too (at most 3 bytes back). */
    len = max;
    for (size_t back = 0; back < 3 && len > 0 && (s[len] & 0xc0) == 0x80; back++) {
        len--;
    }
    return len;
}

char *sw__utf8_repair(char *text, size_t len)
{
    unsigned char *s = (unsigned char *)text;
    for (size_t i = 0; i < len;) {
        size_t n = sequence(s + i, len - i);
        if (n == 0) {
            s[i] = '?';
            n = 1;
        }
        i += n;
    }
    return text;
}

bool sw__utf8_valid(const char *text, size_t len)
{
    const unsigned char *s = (const unsigned char *)text;
    if (sw__utf8_ascii(s, len)) {
        return true;
    }
    for (size_t i = 0; i < len;) {
        size_t n = sequence(s + i, len - i);
        if (n == 0) {
            return false;
        }
        i += n;
    }
    return true;
}

size_t sw__utf8_clean(char *text, size_t len, size_t max, bool *cut)
{
    size_t n = sw__utf8_cut(text, len, max);
    *cut = n < len;
    sw__utf8_fix(text, n);
    return n;
}
