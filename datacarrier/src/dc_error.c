/*
 * dc_error.c - names and messages of the library's error codes (DC_ERRNO_MAP).
 */
#include "datacarrier.h"

const char *dc_err_name(int code)
{
    switch (code) {
#define DC_ERRNO_NAME(name, value, text) \
    case value:                          \
        return "DC_E" #name;
        DC_ERRNO_MAP(DC_ERRNO_NAME)
#undef DC_ERRNO_NAME
    case 0:
        return "OK";
    default:
        return "unknown";
    }
}

const char *dc_strerror(int code)
{
    switch (code) {
#define DC_ERRNO_TEXT(name, value, text) \
    case value:                          \
        return text;
        DC_ERRNO_MAP(DC_ERRNO_TEXT)
#undef DC_ERRNO_TEXT
    case 0:
        return "success";
    default:
        return "unknown error";
    }
}
