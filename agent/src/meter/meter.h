/*
 * meter.h - the registry of user meters (internal side of skywalking.h's sw_meter_* API).
 *
 * A meter is one malloc (struct sw_meter, then its strings, steps and bucket counts), created
 * under the registry's `lock` and never freed: handles stay valid for the process, as the Java
 * toolkit's meters do. The registry is an array of SW_METER_MAX pointers and a count:
 *
 *   operation                          may run together with          synchronisation
 *   ---------                          ---------------------          ---------------
 *   create (sw_meter_*_new)            everything except create       `lock`; the slot is
 *                                                                     published by a release
 *                                                                     store of `count`
 *   record (add / set / histogram_add) everything                     one relaxed atomic RMW or
 *                                                                     store on the meter
 *   read (sw__meter_registry_*)        everything                     acquire load of `count`
 *                                                                     (partner: create's
 *                                                                     release), relaxed values
 *
 * Values are read one field at a time: a histogram read while values are added may show a
 * bucket count from just before or just after an addition; every count is exact once the
 * recording threads are quiescent.
 */
#ifndef SW_METER_METER_H
#define SW_METER_METER_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "skywalking.h"

typedef enum sw__meter_kind {
    SW__METER_COUNTER = 0,
    SW__METER_GAUGE = 1,
    SW__METER_GAUGE_FN = 2,
    SW__METER_HISTOGRAM = 3,
} sw__meter_kind_t;

/* The agent's own meters start so; user meters may not (sw_meter_*_new refuses them). */
#define SW__METER_PREFIX "sw_c_"

struct sw_meter {
    sw__meter_kind_t kind;
    const char *name; /* into the same allocation */
    uint32_t n_tags;
    sw_kv_t tags[SW_METER_TAGS_MAX]; /* strings into the same allocation */
    /* COUNTER, GAUGE: the double's bits (a CAS loop adds, a store sets). Relaxed: a value, no
       order; the report reads it on another thread. */
    _Atomic uint64_t bits;
    double (*supplier)(void *opaque); /* GAUGE_FN; immutable */
    void *opaque;
    uint32_t n_steps;         /* HISTOGRAM */
    const double *steps;      /* n_steps lower bounds, ascending; immutable */
    _Atomic uint64_t *counts; /* n_steps counters, relaxed fetch_add */
};

/* Meters registered so far (acquire: every slot below it is complete). Any thread. */
size_t sw__meter_registry_count(void);

/* The i-th meter, i < sw__meter_registry_count(). Any thread. */
const sw_meter_t *sw__meter_registry_at(size_t i);

/* A counter's or set gauge's current value (relaxed load). */
double sw__meter_scalar(const sw_meter_t *m);

/* The index of the bucket `value` falls in (largest step <= value), or -1 below steps[0].
   Pure; exposed for the unit tests of the bucket edges. */
int sw__meter_bucket_index(const double *steps, uint32_t n_steps, double value);

#endif /* SW_METER_METER_H */
