/*
 * hex.h - the value of one hex digit, for the W3C headers (internal). Pure.
 */
#ifndef SW_PROPAGATION_HEX_H
#define SW_PROPAGATION_HEX_H

#include <stdbool.h>

/* Value of a hex digit, or -1. Upper-case digits count only when `upper` (traceparent allows
   lower case only; percent-escapes in tracestate allow both). */
static inline int sw__hex_value(char c, bool upper)
{
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    if (upper && c >= 'A' && c <= 'F') {
        return c - 'A' + 10;
    }
    return -1;
}

#endif /* SW_PROPAGATION_HEX_H */
