/*
 * dc_error.c - names and messages of the library's error codes (DC_ERRNO_MAP).
 */
#include "datacarrier.h"

const char *dc_err_name(int code)
{
    switch (code) {
    case DC_OK:
        return "DC_OK";
#define DC_ERRNO_NAME(name, value, text) \
    case value:                          \
        return "DC_E" #name;
        DC_ERRNO_MAP(DC_ERRNO_NAME)
#undef DC_ERRNO_NAME
    default:
        return "unknown";
    }
}

const char *dc_strerror(int code)
{
    switch (code) {
    case DC_OK:
        return "success";
#define DC_ERRNO_TEXT(name, value, text) \
    case value:                          \
        return text;
        DC_ERRNO_MAP(DC_ERRNO_TEXT)
#undef DC_ERRNO_TEXT
    default:
        return "unknown error";
    }
}
