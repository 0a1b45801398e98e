/*
 * utf8.h - the agent's one cleaner of strings for protobuf `string` fields (internal).
 *
 * proto3 `string` fields must hold valid UTF-8: the OAP's protobuf-java (and upb, and
 * protobuf-c's decoder) reject a message that carries anything else, which fails the whole
 * gRPC call the message travels in and loses every other segment of it. Strings from the
 * outside (URLs and headers of a traced server's clients, decoded sw8 and tracestate fields,
 * names and values the program passes) are therefore cleaned where they enter a message:
 *
 *   - the segment arena (sw__segment_strndup_len, core/segment.c): every operation name, peer,
 *     tag, span log field and reference string of a segment;
 *   - the decoders of propagation headers (sw8, tracestate): what they hand on is clean;
 *   - the builders of the other messages (LogData, meters, events, instance properties).
 *
 * Cleaning (RFC 3629): a byte that starts no valid sequence (a stray continuation byte, an
 * overlong form, a surrogate, anything above U+10FFFF, a sequence cut short) becomes '?'; the
 * length is unchanged. A cut to a byte limit backs up to the start of a sequence the cut would
 * split. Pure functions; any thread, signal-safe.
 */
#ifndef SW_UTIL_UTF8_H
#define SW_UTIL_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/*
 * Whether s[0..n) is all ASCII (no byte with the high bit set), read a word at a time: up to
 * 8 bytes as two overlapping 4-byte loads, longer strings as 8-byte words and an overlapping
 * last word. What an ordinary ASCII name pays for being checked: a few instructions.
 */
static inline bool sw__utf8_ascii(const void *p, size_t n)
{
    const unsigned char *s = p;
    if (n >= 8) {
        uint64_t acc = 0, w;
        for (size_t i = 0; i + 8 < n; i += 8) {
            memcpy(&w, s + i, 8);
            acc |= w;
        }
        memcpy(&w, s + n - 8, 8);
        return ((acc | w) & 0x8080808080808080u) == 0;
    }
    if (n >= 4) {
        uint32_t a, b;
        memcpy(&a, s, 4);
        memcpy(&b, s + n - 4, 4);
        return ((a | b) & 0x80808080u) == 0;
    }
    if (n == 0) {
        return true;
    }
    return ((s[0] | s[n / 2] | s[n - 1]) & 0x80) == 0;
}

/*
 * The length of s[0..len) cut to at most `max` bytes: len when it fits, else max backed up (by
 * at most 3 bytes) to the start of the sequence that s[max], the first byte dropped, continues.
 * s[max] must be readable when len > max.
 */
size_t sw__utf8_cut(const char *s, size_t len, size_t max);

/* The length of the NUL-terminated s (NULL: 0) cut to at most `max` bytes by sw__utf8_cut;
   reads at most max + 1 bytes of s. */
static inline size_t sw__utf8_len_capped(const char *s, size_t max)
{
    return s != NULL ? sw__utf8_cut(s, strnlen(s, max + 1), max) : 0;
}

/* Replaces every byte of s[0..len) that starts no valid UTF-8 sequence with '?' (see above);
   returns s. The slow part of sw__utf8_fix: call that one, or call this only after
   sw__utf8_ascii said no. */
char *sw__utf8_repair(char *s, size_t len);

/* Makes s[0..len) valid UTF-8 in place, same length: nothing to do for ASCII (the fast path),
   else sw__utf8_repair. */
static inline void sw__utf8_fix(char *s, size_t len)
{
    if (!sw__utf8_ascii(s, len)) {
        (void)sw__utf8_repair(s, len);
    }
}

/* Whether s[0..len) is valid UTF-8 already (for an API that refuses rather than cleans). */
bool sw__utf8_valid(const char *s, size_t len);

/*
 * Makes text[0..len) fit `max` bytes and be valid UTF-8, in place: sw__utf8_cut, then
 * sw__utf8_fix. Returns the new length; *cut says whether it was shortened. text[max] must be
 * readable when len > max.
 */
size_t sw__utf8_clean(char *text, size_t len, size_t max, bool *cut);

#endif /* SW_UTIL_UTF8_H */
