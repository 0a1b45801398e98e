/*
 * errors.c - names and messages for the library's error codes (KP_ERRNO_MAP in kproducer.h).
 */
#include "kproducer.h"

const char *kp_err_name(int code)
{
    switch (code) {
    case KP_OK:
        return "KP_OK";
#define KP_ERRNO_NAME_CASE(name, num, text) \
    case num:                               \
        return "KP_E" #name;
        KP_ERRNO_MAP(KP_ERRNO_NAME_CASE)
#undef KP_ERRNO_NAME_CASE
    default:
        return "unknown";
    }
}

const char *kp_strerror(int code)
{
    switch (code) {
    case KP_OK:
        return "success";
#define KP_ERRNO_TEXT_CASE(name, num, text) \
    case num:                               \
        return text;
        KP_ERRNO_MAP(KP_ERRNO_TEXT_CASE)
#undef KP_ERRNO_TEXT_CASE
    default:
        return "unknown error";
    }
}
