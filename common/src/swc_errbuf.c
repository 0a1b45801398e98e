/*
 * swc_errbuf.c - errbuf formatting (swc_errbuf.h).
 */
#include "swc_errbuf.h"

#include <stdio.h>

void swc__errbuf_vprintf(char *errbuf, size_t errlen, const char *fmt, va_list ap)
{
    if (errbuf == NULL || errlen == 0) {
        return;
    }
    /* vsnprintf cuts the message to errlen - 1 bytes and terminates it; a negative result
       (an encoding error) still leaves a string, made empty here. */
    if (vsnprintf(errbuf, errlen, fmt, ap) < 0) {
        errbuf[0] = '\0';
    }
}

void swc__errbuf_printf(char *errbuf, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    swc__errbuf_vprintf(errbuf, errlen, fmt, ap);
    va_end(ap);
}
