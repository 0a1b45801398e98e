/*
 * errors.c - names and messages of the SW_E* codes, and of the DC_E* and KP_E* codes of the
 * two libraries the agent is built on (their ranges do not overlap SW_E*'s, see skywalking.h).
 */
#include "datacarrier.h"
#include "kproducer.h"
#include "skywalking.h"

/* Which library's range a negative code falls in (the hundreds: -1xx DC, -2xx KP). */
static bool in_range(int code, int hundreds)
{
    return code < 0 && -code / 100 == hundreds;
}

const char *sw_err_name(int code)
{
    switch (code) {
    case SW_OK:
        return "SW_OK";
#define SW_ERRNO_NAME(name, value, text) \
    case value:                          \
        return "SW_E" #name;
        SW_ERRNO_MAP(SW_ERRNO_NAME)
#undef SW_ERRNO_NAME
    default:
        break;
    }
    if (in_range(code, 1)) {
        return dc_err_name(code);
    }
    if (in_range(code, 2)) {
        return kp_err_name(code);
    }
    return "unknown";
}

const char *sw_strerror(int code)
{
    switch (code) {
    case SW_OK:
        return "success";
#define SW_ERRNO_TEXT(name, value, text) \
    case value:                          \
        return text;
        SW_ERRNO_MAP(SW_ERRNO_TEXT)
#undef SW_ERRNO_TEXT
    default:
        break;
    }
    if (in_range(code, 1)) {
        return dc_strerror(code);
    }
    if (in_range(code, 2)) {
        return kp_strerror(code);
    }
    return "unknown error";
}
