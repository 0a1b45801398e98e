/*
 * reporter.c - what every reporter shares (reporter.h): the growable array of records.
 */
#include "reporter.h"

#include <stdlib.h>

bool sw__report_records_reserve(sw__report_record_t **records, size_t *cap, size_t n)
{
    if (*cap >= n) {
        return true;
    }
    size_t grow = *cap ? *cap : 64;
    while (grow < n) {
        grow *= 2;
    }
    sw__report_record_t *grown = realloc(*records, grow * sizeof *grown);
    if (grown == NULL) {
        return false;
    }
    *records = grown;
    *cap = grow;
    return true;
}
