/*
 * meter_registry.c - user meters: creation (validated, deduplicated, bounded) and the
 * lock-free recording paths. See meter.h for the concurrency table.
 */
#include "meter.h"

#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "../util/utf8.h"

/* lock serialises creation (the search for a duplicate and the append); it is never taken on a
   recording path. slots[i] for i < count are written once, before count is published. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static sw_meter_t *slots[SW_METER_MAX];
static _Atomic size_t count;
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

/* A child after fork has one thread: another parent thread may have held the lock. */
static void after_fork_child(void)
{
    pthread_mutex_init(&lock, NULL);
}

static void fork_hook_register(void)
{
    (void)pthread_atfork(NULL, NULL, after_fork_child);
}

static double bits_to_double(uint64_t bits)
{
    double d;
    memcpy(&d, &bits, sizeof d);
    return d;
}

static uint64_t double_to_bits(double d)
{
    uint64_t bits;
    memcpy(&bits, &d, sizeof bits);
    return bits;
}

/* [A-Za-z_][A-Za-z0-9_]*, 1..SW_METER_NAME_MAX bytes. */
static bool name_valid(const char *s)
{
    if (s == NULL) {
        return false;
    }
    size_t n = strnlen(s, SW_METER_NAME_MAX + 1);
    if (n == 0 || n > SW_METER_NAME_MAX || (s[0] >= '0' && s[0] <= '9')) {
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        bool ok =
            (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
        if (!ok) {
            return false;
        }
    }
    return true;
}

static bool value_valid(const char *s)
{
    if (s == NULL) {
        return false;
    }
    size_t n = strnlen(s, SW_METER_TAG_VALUE_MAX + 1);
    if (n > SW_METER_TAG_VALUE_MAX || !sw__utf8_valid(s, n)) {
        return false; /* a label is a proto3 string: valid UTF-8 only (util/utf8.h) */
    }
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c == 0x7f) {
            return false;
        }
    }
    return true;
}

static bool tags_valid(const sw_kv_t *tags, size_t n)
{
    if (n > SW_METER_TAGS_MAX || (n != 0 && tags == NULL)) {
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        if (!name_valid(tags[i].key) || !value_valid(tags[i].value)) {
            return false;
        }
        for (size_t j = 0; j < i; j++) {
            if (strcmp(tags[i].key, tags[j].key) == 0) {
                return false; /* a label twice */
            }
        }
    }
    return true;
}

static bool steps_valid(const double *steps, size_t n)
{
    if (steps == NULL || n == 0 || n > SW_METER_STEPS_MAX) {
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(steps[i]) || (i > 0 && !(steps[i] > steps[i - 1]))) {
            return false;
        }
    }
    return true;
}

/* Whether m has this name and these tags (in any order). */
static bool same_id(const sw_meter_t *m, const char *name, const sw_kv_t *tags, size_t n)
{
    if (strcmp(m->name, name) != 0 || m->n_tags != n) {
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        bool found = false;
        for (size_t j = 0; j < n && !found; j++) {
            found = strcmp(m->tags[j].key, tags[i].key) == 0 &&
                    strcmp(m->tags[j].value, tags[i].value) == 0;
        }
        if (!found) {
            return false;
        }
    }
    return true;
}

/* Copies s into the allocation's string area at *at; returns the copy. */
static const char *strings_put(char **at, const char *s)
{
    size_t n = strlen(s) + 1;
    memcpy(*at, s, n);
    const char *copy = *at;
    *at += n;
    return copy;
}

/* One allocation: the struct, the counts, the steps, then the strings. */
static sw_meter_t *meter_alloc(sw__meter_kind_t kind, const char *name, const sw_kv_t *tags,
                               size_t n_tags, const double *steps, size_t n_steps)
{
    size_t strings = strlen(name) + 1;
    for (size_t i = 0; i < n_tags; i++) {
        strings += strlen(tags[i].key) + 1 + strlen(tags[i].value) + 1;
    }
    size_t size =
        sizeof(sw_meter_t) + n_steps * (sizeof(_Atomic uint64_t) + sizeof(double)) + strings;
    sw_meter_t *m = calloc(1, size);
    if (m == NULL) {
        return NULL;
    }
    m->kind = kind;
    char *p = (char *)(m + 1);
    if (n_steps != 0) {
        m->counts = (_Atomic uint64_t *)(void *)p;
        for (size_t i = 0; i < n_steps; i++) {
            atomic_init(&m->counts[i], 0);
        }
        p += n_steps * sizeof(_Atomic uint64_t);
        memcpy(p, steps, n_steps * sizeof(double));
        m->steps = (const double *)(void *)p;
        m->n_steps = (uint32_t)n_steps;
        p += n_steps * sizeof(double);
    }
    m->name = strings_put(&p, name);
    for (size_t i = 0; i < n_tags; i++) {
        m->tags[i].key = strings_put(&p, tags[i].key);
        m->tags[i].value = strings_put(&p, tags[i].value);
    }
    m->n_tags = (uint32_t)n_tags;
    atomic_init(&m->bits, double_to_bits(0.0));
    return m;
}

/* Validates, finds an equal meter or appends a new one. */
static int meter_create(sw__meter_kind_t kind, const char *name, const sw_kv_t *tags, size_t n_tags,
                        const double *steps, size_t n_steps, double (*supplier)(void *),
                        void *opaque, sw_meter_t **out)
{
    if (out == NULL || !name_valid(name) ||
        strncmp(name, SW__METER_PREFIX, sizeof SW__METER_PREFIX - 1) == 0 ||
        !tags_valid(tags, n_tags) ||
        (kind == SW__METER_HISTOGRAM && !steps_valid(steps, n_steps)) ||
        (kind == SW__METER_GAUGE_FN && supplier == NULL)) {
        return SW_EINVAL;
    }
    pthread_once(&fork_once, fork_hook_register);
    pthread_mutex_lock(&lock);
    size_t n = atomic_load_explicit(&count, memory_order_relaxed); /* only we write it */
    for (size_t i = 0; i < n; i++) {
        sw_meter_t *m = slots[i];
        if (same_id(m, name, tags, n_tags)) {
            pthread_mutex_unlock(&lock);
            if (m->kind != kind) {
                return SW_EINVAL;
            }
            *out = m;
            return 0;
        }
    }
    if (n == SW_METER_MAX) {
        pthread_mutex_unlock(&lock);
        return SW_ELIMIT;
    }
    sw_meter_t *m = meter_alloc(kind, name, tags, n_tags, steps, n_steps);
    if (m == NULL) {
        pthread_mutex_unlock(&lock);
        return SW_ENOMEM;
    }
    m->supplier = supplier;
    m->opaque = opaque;
    slots[n] = m;
    /* release: publishes the complete meter; partner: sw__meter_registry_count's acquire. */
    atomic_store_explicit(&count, n + 1, memory_order_release);
    pthread_mutex_unlock(&lock);
    *out = m;
    return 0;
}

int sw_meter_counter_new(const char *name, const sw_kv_t *tags, size_t n_tags, sw_meter_t **out)
{
    return meter_create(SW__METER_COUNTER, name, tags, n_tags, NULL, 0, NULL, NULL, out);
}

int sw_meter_gauge_new(const char *name, const sw_kv_t *tags, size_t n_tags, sw_meter_t **out)
{
    return meter_create(SW__METER_GAUGE, name, tags, n_tags, NULL, 0, NULL, NULL, out);
}

int sw_meter_gauge_callback_new(const char *name, const sw_kv_t *tags, size_t n_tags,
                                double (*supplier)(void *opaque), void *opaque, sw_meter_t **out)
{
    return meter_create(SW__METER_GAUGE_FN, name, tags, n_tags, NULL, 0, supplier, opaque, out);
}

int sw_meter_histogram_new(const char *name, const sw_kv_t *tags, size_t n_tags,
                           const double *steps, size_t n_steps, sw_meter_t **out)
{
    return meter_create(SW__METER_HISTOGRAM, name, tags, n_tags, steps, n_steps, NULL, NULL, out);
}

void sw_meter_counter_add(sw_meter_t *m, double delta)
{
    if (m == NULL || m->kind != SW__METER_COUNTER) {
        return;
    }
    /* relaxed: the total orders nothing; the CAS makes concurrent additions exact. */
    uint64_t old = atomic_load_explicit(&m->bits, memory_order_relaxed);
    while (!atomic_compare_exchange_weak_explicit(&m->bits, &old,
                                                  double_to_bits(bits_to_double(old) + delta),
                                                  memory_order_relaxed, memory_order_relaxed)) {
    }
}

void sw_meter_gauge_set(sw_meter_t *m, double value)
{
    if (m == NULL || m->kind != SW__METER_GAUGE) {
        return;
    }
    atomic_store_explicit(&m->bits, double_to_bits(value), memory_order_relaxed);
}

int sw__meter_bucket_index(const double *steps, uint32_t n_steps, double value)
{
    if (n_steps == 0 || !(value >= steps[0])) { /* below the first step, or NaN */
        return -1;
    }
    uint32_t lo = 0, hi = n_steps; /* steps[lo] <= value; the answer is in [lo, hi) */
    while (hi - lo > 1) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (steps[mid] <= value) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    return (int)lo;
}

void sw_meter_histogram_add(sw_meter_t *m, double value)
{
    if (m == NULL || m->kind != SW__METER_HISTOGRAM) {
        return;
    }
    int i = sw__meter_bucket_index(m->steps, m->n_steps, value);
    if (i >= 0) {
        atomic_fetch_add_explicit(&m->counts[i], 1, memory_order_relaxed);
    }
}

double sw__meter_scalar(const sw_meter_t *m)
{
    return bits_to_double(atomic_load_explicit(&((sw_meter_t *)m)->bits, memory_order_relaxed));
}

int sw_meter_value(sw_meter_t *m, double *value)
{
    if (m == NULL || value == NULL) {
        return SW_EINVAL;
    }
    switch (m->kind) {
    case SW__METER_GAUGE_FN:
        *value = m->supplier(m->opaque);
        break;
    case SW__METER_HISTOGRAM: {
        uint64_t total = 0;
        for (uint32_t i = 0; i < m->n_steps; i++) {
            total += atomic_load_explicit(&m->counts[i], memory_order_relaxed);
        }
        *value = (double)total;
        break;
    }
    default:
        *value = sw__meter_scalar(m);
        break;
    }
    return 0;
}

size_t sw__meter_registry_count(void)
{
    return atomic_load_explicit(&count, memory_order_acquire);
}

const sw_meter_t *sw__meter_registry_at(size_t i)
{
    return slots[i];
}
