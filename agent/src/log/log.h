/*
 * log.h - the agent's one logging path (internal).
 *
 * Every message of libskywalking, its preload library and its -finstrument-functions hooks
 * goes through sw__log: a level (sw_log_level_t, skywalking.h), a printf format of the
 * agent's own text, and arguments. Text that comes from outside the agent (a collector's
 * command, a broker's error string, a line of a config file, a header value) is passed
 * through sw__log_escape first, which escapes control and non-ASCII bytes and caps the length.
 *
 * sw__log drops messages above the level set by sw_set_log_level (default SW_LOG_INFO) before
 * formatting them, formats into a bounded buffer (SW__LOG_LINE_MAX; longer text is cut and
 * ends in "..."), replaces any control byte left in the result, and applies the rate limit:
 * each call site (its format string) may log SW__LOG_BURST lines per SW__LOG_WINDOW_MS; later
 * repeats in the window are counted, and the next line from that site after the window says
 * how many were suppressed. The message then goes to the handler set by sw_set_log_handler, or
 * by default to stderr as one line "skywalking-c <level>: <message>\n" in a single write(2).
 *
 * Threads: any thread may log; handler calls are serialised by one lock, which also protects
 * the rate-limit table. sw__log never blocks on anything but that lock and the handler (the
 * default handler's write to stderr). It never allocates.
 */
#ifndef SW_LOG_LOG_H
#define SW_LOG_LOG_H

#include <stddef.h>

#include "skywalking.h"

/* Longest message handed to a handler, NUL excluded. */
#define SW__LOG_LINE_MAX 1024
/* Lines per call site per window before repeats are suppressed. */
#define SW__LOG_BURST     5
#define SW__LOG_WINDOW_MS 60000
/* Default cap of an escaped piece of outside text (bytes of output, NUL excluded). */
#define SW__LOG_TEXT_MAX 200
/* A buffer that always holds sw__log_escape's output at the default cap. */
#define SW__LOG_ESCAPED_SIZE (SW__LOG_TEXT_MAX + 1)

/* Logs one message (see above). `fmt` must be a string literal: it keys the rate limit. */
void sw__log(sw_log_level_t level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * Writes `len` bytes of outside `text` into `buf` (of `size` bytes, >= 8) as printable ASCII:
 * bytes 0x20..0x7e stay (a backslash becomes "\\"), \n \r \t become "\n" "\r" "\t", any other
 * byte "\xNN". When the escaped form does not fit in size - 1 bytes it is cut at a whole escape
 * and ends in "...". NULL text is written as "(null)". Returns buf. Pure; any thread.
 */
const char *sw__log_escape(char *buf, size_t size, const char *text, size_t len);

/* sw__log_escape of a NUL-terminated string into a buffer of SW__LOG_ESCAPED_SIZE. */
#define SW__LOG_ESC(buf, text) \
    sw__log_escape((buf), sizeof(buf), (text), (text) != NULL ? strlen(text) : 0)

/* Tests only: forgets the rate-limit state and sets the window (0: SW__LOG_WINDOW_MS). */
void sw__log_reset(unsigned window_ms);

#endif /* SW_LOG_LOG_H */
