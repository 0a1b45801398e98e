/*
 * swc_errbuf.h - the human message of a failed call, written into a caller's errbuf.
 *
 * The public functions that take `char *errbuf, size_t errlen` (kp_conf_set, dc_carrier_create,
 * sw_init, ...) say there which setting was wrong, where a code cannot. Shared by the three
 * libraries like swc_clock.h (common/CMakeLists.txt).
 */
#ifndef SWC_ERRBUF_H
#define SWC_ERRBUF_H

#include <stdarg.h>
#include <stddef.h>

/*
 * Formats the message into errbuf[errlen]: cut to fit, always NUL-terminated. Writes nothing
 * when errbuf is NULL or errlen is 0 (the caller did not ask for a message). Any thread.
 */
void swc__errbuf_printf(char *errbuf, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The same with a va_list, for a library's own variadic wrapper. */
void swc__errbuf_vprintf(char *errbuf, size_t errlen, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

#endif /* SWC_ERRBUF_H */
