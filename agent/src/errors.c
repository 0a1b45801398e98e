/*
 * errors.c - names and messages of the SW_E* codes.
 */
#include "skywalking.h"

const char *sw_err_name(int code)
{
    switch (code) {
    case 0:
        return "SW_OK";
#define SW_ERRNO_NAME(name, value, text) \
    case value:                          \
        return "SW_E" #name;
        SW_ERRNO_MAP(SW_ERRNO_NAME)
#undef SW_ERRNO_NAME
    }
    return "unknown";
}

const char *sw_strerror(int code)
{
    switch (code) {
    case 0:
        return "success";
#define SW_ERRNO_TEXT(name, value, text) \
    case value:                          \
        return text;
        SW_ERRNO_MAP(SW_ERRNO_TEXT)
#undef SW_ERRNO_TEXT
    }
    return "unknown error";
}
