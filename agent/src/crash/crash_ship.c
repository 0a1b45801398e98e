/*
 * crash_ship.c - sending what crashed processes of this service left in the crash directory
 * (normal context, sw_init).
 *
 * A spool is taken only when its process is gone: the owner holds flock(LOCK_EX) on it for
 * its whole life (the kernel drops the lock when the process dies), so a spool that can be
 * locked is an orphan. Then:
 *   - no crash recorded (the process was killed or never reached sw_shutdown): removed;
 *   - damaged or truncated (crash_spool_read.c): removed, counted in spools_dropped, logged;
 *   - another service's (the name in the header differs): left alone;
 *   - recorded: each segment is decoded, its crash log's stack placeholder replaced by the
 *     frames named by the symbolizer (symbol/symbolizer.h; "module+0xoffset" where the binary
 *     is gone), re-encoded by the agent's encoder with the crashed process's service
 *     and instance, and handed to the running pipeline's carrier (file, Kafka or gRPC
 *     reporter); a Crash event goes to the log pipeline (gRPC only); the spool is removed
 *     once every segment was handed over.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../applog/log_report.h"
#include "../core/agent_state.h"
#include "../encode/chunk.h"
#include "../encode/pb_reverse.h"
#include "../log/log.h"
#include "../symbol/symbolizer.h"
#include "crash.h"
#include "crash_dir.h"
#include "crash_internal.h"
#include "crash_spool.h"
#include "tracing.pb-c.h"

#define FRAME_PLACE "@frames"
#define STACK_MAX   8192

/* This process's counters: written by sw_init's thread (lifecycle lock), read by tests. */
static _Atomic uint64_t spools_shipped, segments_shipped, spools_dropped;

void sw__crash_stats(sw__crash_stats_t *out)
{
    /* relaxed: counters, ordering nothing. */
    out->spools_shipped = atomic_load_explicit(&spools_shipped, memory_order_relaxed);
    out->segments_shipped = atomic_load_explicit(&segments_shipped, memory_order_relaxed);
    out->spools_dropped = atomic_load_explicit(&spools_dropped, memory_order_relaxed);
    out->threads_unregistered = atomic_load_explicit(&sw__crash_unregistered, memory_order_relaxed);
}

/* Budget of the symbolizer the shipper creates when it has a spool to send. */
#define SYMBOLIZER_BYTES (64u * 1024u * 1024u)

/* The symbolizer of this sw__crash_ship call: created for the first spool that is sent,
   destroyed at its end (sw_init's thread only). */
static sw__symbolizer_t *symbolizer;

/*
 * One frame as text: the symbolizer's "function (file:line)" when the module's file is still
 * there, else "module+0xoffset" (symbol/symbolizer.h). Frame 0 is the interrupted pc; the
 * others are return addresses, looked up one byte earlier (inside the call).
 */
static void frame_name(const sw__crash_view_t *v, uint32_t i, char *out, size_t cap)
{
    const sw__crash_frame_t *f = &v->frames[i];
    if (f->module >= v->module_count) {
        sw__crash_frame_format(v, f, out, cap);
        return;
    }
    if (symbolizer == NULL && sw__symbolizer_create(SYMBOLIZER_BYTES, &symbolizer) != 0) {
        symbolizer = NULL;
    }
    const sw__crash_module_view_t *m = &v->modules[f->module];
    char path[1024];
    snprintf(path, sizeof path, "%.*s", (int)m->path_len, m->path);
    if (symbolizer == NULL || path[0] == '\0') {
        sw__crash_frame_format(v, f, out, cap);
        return;
    }
    uint64_t offset = i != 0 && f->offset != 0 ? f->offset - 1 : f->offset;
    sw__symbolizer_module_offset(symbolizer, path, offset, out, cap);
}

/* The stack text of the crash log: one frame per line, "#<n> <frame>". */
static void stack_text(const sw__crash_view_t *v, char *out, size_t cap)
{
    size_t at = 0;
    out[0] = '\0';
    for (uint32_t i = 0; i < v->frame_count && at + 1 < cap; i++) {
        char name[512];
        frame_name(v, i, name, sizeof name);
        int n = snprintf(out + at, cap - at, "%s#%u %s", i != 0 ? "\n" : "", i, name);
        if (n < 0 || (size_t)n >= cap - at) {
            break;
        }
        at += (size_t)n;
    }
}

static void attr_kv(sw__segment_t *seg, uint8_t kind, uint16_t span, const char *k, const char *val)
{
    sw__attr_t *a = sw__segment_attr_add(seg);
    if (a == NULL) {
        return;
    }
    a->kind = kind;
    a->span_id = span;
    a->key = sw__segment_strdup_len(seg, k, &a->key_len);
    a->value = sw__segment_strdup_len(seg, val, &a->value_len);
}

static void span_fill(sw__segment_t *seg, const Skywalking__V3__SpanObject *so, uint16_t id,
                      const char *stack)
{
    sw__span_t *sp = &seg->spans[id];
    sp->start_ms = so->starttime;
    sp->end_ms = so->endtime;
    sp->operation = sw__segment_strdup_len(seg, so->operationname, &sp->operation_len);
    sp->peer_len = 0;
    sp->peer = so->peer != NULL && so->peer[0] != '\0'
                   ? sw__segment_strdup_len(seg, so->peer, &sp->peer_len)
                   : NULL;
    sp->parent_id = so->parentspanid;
    sp->component_id = so->componentid;
    sp->type = (uint8_t)so->spantype;
    sp->layer = (uint8_t)so->spanlayer;
    sp->is_error = so->iserror ? 1 : 0;
    sp->reserved = so->skipanalysis ? 1 : 0;
    for (size_t t = 0; t < so->n_tags; t++) {
        attr_kv(seg, SW__ATTR_TAG, id, so->tags[t]->key, so->tags[t]->value);
    }
    for (size_t l = 0; l < so->n_logs; l++) {
        sw__attr_t *log = sw__segment_attr_add(seg);
        if (log == NULL) {
            break;
        }
        log->kind = SW__ATTR_LOG;
        log->span_id = id;
        log->time_ms = so->logs[l]->time;
        log->kv_count = 0;
        for (size_t d = 0; d < so->logs[l]->n_data; d++) {
            const Skywalking__V3__KeyStringValuePair *kv = so->logs[l]->data[d];
            bool place = strcmp(kv->key, "stack") == 0 && strcmp(kv->value, FRAME_PLACE) == 0;
            uint32_t before = seg->attr_count;
            attr_kv(seg, SW__ATTR_LOG_KV, id, kv->key, place ? stack : kv->value);
            log->kv_count += seg->attr_count - before;
        }
    }
    for (size_t r = 0; r < so->n_refs && seg->ref_count < SW__REFS_MAX; r++) {
        const Skywalking__V3__SegmentReference *in = so->refs[r];
        sw__ref_t *ref = &seg->refs[seg->ref_count++];
        ref->type = (uint8_t)in->reftype;
        ref->span_id = id;
        ref->parent_span_id = in->parentspanid;
        ref->trace_id = sw__segment_strdup(seg, in->traceid);
        ref->parent_segment_id = sw__segment_strdup(seg, in->parenttracesegmentid);
        ref->parent_service = sw__segment_strdup(seg, in->parentservice);
        ref->parent_instance = sw__segment_strdup(seg, in->parentserviceinstance);
        ref->parent_endpoint = sw__segment_strdup(seg, in->parentendpoint);
        ref->address = sw__segment_strdup(seg, in->networkaddressusedatpeer);
    }
}

/* A segment block holding the decoded SegmentObject (malloc'd; the caller frees), or NULL. */
static sw__segment_t *segment_rebuild(const Skywalking__V3__SegmentObject *so, size_t len,
                                      const char *stack)
{
    if (so->n_spans == 0 || so->n_spans > 10000 || so->traceid == NULL ||
        so->tracesegmentid == NULL || strlen(so->traceid) >= SW__TRACE_ID_MAX ||
        strlen(so->tracesegmentid) >= SW__SEGMENT_ID_MAX) {
        return NULL;
    }
    /* Room for every string and attribute record of the message (a record of 40 bytes per
       key/value of at least 4 bytes) and the stack text in each span's crash log. */
    uint64_t want = (uint64_t)len * 12u + (uint64_t)strlen(stack) * so->n_spans + 4096u;
    uint32_t arena = want < (1u << 24) ? (uint32_t)want : (1u << 24);
    size_t bytes = sw__segment_block_size((uint32_t)so->n_spans, arena);
    sw__segment_t *seg = bytes != 0 ? aligned_alloc(64, (bytes + 63) & ~(size_t)63) : NULL;
    if (seg == NULL) {
        return NULL;
    }
    sw__segment_format(seg, (uint32_t)so->n_spans, arena);
    sw__segment_reset(seg);
    snprintf(seg->trace_id, sizeof seg->trace_id, "%s", so->traceid);
    snprintf(seg->segment_id, sizeof seg->segment_id, "%s", so->tracesegmentid);
    seg->size_limited = so->issizelimited;
    for (size_t i = 0; i < so->n_spans; i++) {
        span_fill(seg, so->spans[i], (uint16_t)i, stack);
    }
    seg->span_count = (uint32_t)so->n_spans;
    return seg;
}

/* Hands one spooled SegmentObject to the pipeline. Returns 0, -1 (undecodable) or -2 (the
   carrier refused it: try again at the next start). */
static int segment_ship(const sw__crash_segment_view_t *sv, const char *stack,
                        const sw__encoder_t *enc, sw__chunk_t **chunk)
{
    Skywalking__V3__SegmentObject *so =
        skywalking__v3__segment_object__unpack(NULL, sv->len, sv->data);
    if (so == NULL) {
        return -1;
    }
    sw__segment_t *seg = segment_rebuild(so, sv->len, stack);
    skywalking__v3__segment_object__free_unpacked(so, NULL);
    if (seg == NULL) {
        return -1;
    }
    int rc = -2;
    sw__encoded_t *rec = sw__chunk_encode(&sw__agent.chunks, chunk, enc, seg);
    if (rec != NULL) {
        /* Counted as a finished segment of this run before the consumer can count it reported,
           so that finished = reported + dropped + failed holds (skywalking.h, sw_stats_t). */
        pthread_mutex_lock(&sw__agent.registry_lock);
        sw__agent.retired.segments_finished++;
        pthread_mutex_unlock(&sw__agent.registry_lock);
        if (dc_produce(sw__agent.carrier, rec)) {
            rc = 0;
        } else {
            sw__chunk_unencode(rec);
            pthread_mutex_lock(&sw__agent.registry_lock);
            sw__agent.retired.segments_finished--;
            pthread_mutex_unlock(&sw__agent.registry_lock);
        }
        sw__chunk_after_hand_off(&sw__agent.chunks, chunk);
    }
    free(seg);
    return rc;
}

/* The Crash event (skywalking.v3.Event: uuid 1, source 2 {service 1, serviceInstance 2},
   name 3, type 4 (Error = 1), message 5, parameters 6 (map), startTime 7, endTime 8,
   layer 9), built for sw__log_pipeline_produce. */
typedef struct event_arg {
    const sw__crash_header_t *h;
} event_arg_t;

static void event_param(sw__pbr_t *w, const char *k, const char *v)
{
    uint8_t *m = sw__pbr_mark(w);
    sw__pbr_string(w, 2, v);
    sw__pbr_string(w, 1, k);
    sw__pbr_close(w, 6, m);
}

static sw__log_item_t *event_build(const sw__log_settings_t *s, void *argp, bool *truncated)
{
    (void)s;
    *truncated = false;
    const sw__crash_header_t *h = ((event_arg_t *)argp)->h;
    char service[SW__CRASH_NAME_MAX], instance[SW__CRASH_NAME_MAX], msg[256], num[3][32], uuid[40];
    snprintf(service, sizeof service, "%.*s", (int)h->service_len, h->service);
    snprintf(instance, sizeof instance, "%.*s", (int)h->instance_len, h->instance);
    const char *sig = sw__crash_signal_name(h->signo);
    snprintf(msg, sizeof msg, "The process %u crashed: %s at 0x%llx (si_code %d) in thread %u",
             h->pid, sig, (unsigned long long)h->fault_addr, h->si_code, h->tid);
    snprintf(num[0], sizeof num[0], "%u", h->pid);
    snprintf(num[1], sizeof num[1], "%u", h->tid);
    snprintf(num[2], sizeof num[2], "0x%llx", (unsigned long long)h->fault_addr);
    uint8_t r[16];
    if (getrandom(r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r) {
        memset(r, 0, sizeof r);
        memcpy(r, &h->time_ms, sizeof h->time_ms);
        memcpy(r + 8, &h->pid, sizeof h->pid);
    }
    r[6] = (uint8_t)((r[6] & 0x0f) | 0x40);
    r[8] = (uint8_t)((r[8] & 0x3f) | 0x80);
    snprintf(uuid, sizeof uuid,
             "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", r[0], r[1],
             r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10], r[11], r[12], r[13], r[14],
             r[15]);
    size_t bound = 1024 + sizeof service + sizeof instance + sizeof msg;
    sw__log_item_t *it = malloc(sizeof *it + bound);
    if (it == NULL) {
        return NULL;
    }
    uint8_t *buf = (uint8_t *)(it + 1);
    sw__pbr_t w = {.start = buf, .p = buf + bound, .overflow = false};
    sw__pbr_string(&w, 9, "GENERAL");
    sw__pbr_int64(&w, 8, h->time_ms);
    sw__pbr_int64(&w, 7, h->time_ms);
    event_param(&w, "tid", num[1]);
    event_param(&w, "signal", sig);
    event_param(&w, "pid", num[0]);
    event_param(&w, "fault_address", num[2]);
    sw__pbr_string(&w, 5, msg);
    sw__pbr_int32(&w, 4, 1); /* Error */
    sw__pbr_string(&w, 3, "Crash");
    uint8_t *src = sw__pbr_mark(&w);
    sw__pbr_string(&w, 2, instance);
    sw__pbr_string(&w, 1, service);
    sw__pbr_close(&w, 2, src);
    sw__pbr_string(&w, 1, uuid);
    return sw__log_item_finish(it, &w, buf + bound, SW__LOG_ITEM_EVENT);
}

/* Ships a parsed, recorded spool. Returns whether everything was handed over. */
static bool spool_ship(const sw__crash_view_t *v)
{
    const sw__crash_header_t *h = v->header;
    char service[SW__CRASH_NAME_MAX], instance[SW__CRASH_NAME_MAX];
    snprintf(service, sizeof service, "%.*s", (int)h->service_len, h->service);
    snprintf(instance, sizeof instance, "%.*s", (int)h->instance_len, h->instance);
    sw__encoder_t enc = {0};
    char *stack = malloc(STACK_MAX);
    if (stack == NULL || sw__encoder_set_process(&enc, service, instance) != 0) {
        free(stack);
        return false;
    }
    stack_text(v, stack, STACK_MAX);
    sw__chunk_t *chunk = NULL;
    bool all = true;
    uint64_t undecodable = 0;
    for (uint32_t i = 0; i < v->segment_count; i++) {
        int rc = segment_ship(&v->segments[i], stack, &enc, &chunk);
        if (rc == 0) {
            atomic_fetch_add_explicit(&segments_shipped, 1, memory_order_relaxed);
        } else if (rc == -1) {
            undecodable++;
        } else {
            all = false;
        }
    }
    if (chunk != NULL) {
        sw__chunk_seal(&sw__agent.chunks, chunk);
    }
    if (undecodable != 0) {
        atomic_fetch_add_explicit(&spools_dropped, 1, memory_order_relaxed);
        sw__log(SW_LOG_WARN, "crash spool: %llu segment(s) could not be decoded and were dropped",
                (unsigned long long)undecodable);
    }
    event_arg_t arg = {h};
    (void)sw__log_pipeline_produce(event_build, &arg); /* SW_ESTATE without gRPC: no event */
    sw__encoder_free(&enc);
    free(stack);
    return all;
}

/* Reads the whole of a spool file (at most twice the spool size). NULL: unreadable. */
static uint8_t *spool_read(int fd, size_t *len)
{
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() || st.st_size <= 0 ||
        (uint64_t)st.st_size > 2u * SW__CRASH_SPOOL_BYTES) {
        return NULL;
    }
    uint8_t *buf = malloc((size_t)st.st_size);
    size_t got = 0;
    while (buf != NULL && got < (size_t)st.st_size) {
        ssize_t n = pread(fd, buf + got, (size_t)st.st_size - got, (off_t)got);
        if (n <= 0) {
            break;
        }
        got += (size_t)n;
    }
    *len = got;
    return buf;
}

static void spool_take(int dir_fd, const char *name, const sw_config_t *cfg, sw__crash_view_t *v)
{
    int fd = openat(dir_fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        return;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        close(fd); /* its process is alive */
        return;
    }
    size_t len = 0;
    uint8_t *buf = spool_read(fd, &len);
    int rc = buf != NULL ? sw__crash_spool_parse(buf, len, v) : SW__CRASH_CORRUPT;
    bool remove = true;
    if (rc == SW__CRASH_OK) {
        const sw__crash_header_t *h = v->header;
        if (h->service_len != strlen(cfg->service_name) ||
            memcmp(h->service, cfg->service_name, h->service_len) != 0) {
            remove = false; /* another service's (its names hash alike): not ours to send */
        } else if (spool_ship(v)) {
            atomic_fetch_add_explicit(&spools_shipped, 1, memory_order_relaxed);
            sw__log(SW_LOG_INFO, "crash spool %s: %s of process %u sent (%u segment(s))", name,
                    sw__crash_signal_name(h->signo), h->pid, h->segment_count);
        } else {
            remove = false;
        }
    } else if (rc != SW__CRASH_EMPTY) {
        atomic_fetch_add_explicit(&spools_dropped, 1, memory_order_relaxed);
        sw__log(SW_LOG_WARN, "crash spool %s rejected: %s", name, sw__crash_spool_strerror(rc));
    }
    if (remove) {
        unlinkat(dir_fd, name, 0);
    }
    free(buf);
    close(fd); /* drops the lock */
}

void sw__crash_ship(const sw_config_t *cfg)
{
    /* relaxed: sw_init's own thread published the run (or not). */
    if (!cfg->crash_recorder || sw__agent.carrier == NULL ||
        atomic_load_explicit(&sw__epoch, memory_order_relaxed) == 0) {
        return;
    }
    char path[1100], err[1300];
    int dir_fd = sw__crash_dir_open(cfg, path, sizeof path, err, sizeof err);
    if (dir_fd < 0) {
        return; /* sw__crash_arm says why */
    }
    int list_fd = dup(dir_fd);
    DIR *d = list_fd >= 0 ? fdopendir(list_fd) : NULL;
    sw__crash_view_t *v = d != NULL ? malloc(sizeof *v) : NULL;
    char prefix[24];
    snprintf(prefix, sizeof prefix, "%s.", sw__crash_service_key(cfg->service_name));
    size_t plen = strlen(prefix), slen = strlen(SW__CRASH_SUFFIX);
    for (struct dirent *e; v != NULL && (e = readdir(d)) != NULL;) {
        size_t n = strlen(e->d_name);
        if (n > plen + slen && strncmp(e->d_name, prefix, plen) == 0 &&
            strcmp(e->d_name + n - slen, SW__CRASH_SUFFIX) == 0 &&
            strcmp(e->d_name, sw__crash.name) != 0) {
            spool_take(dir_fd, e->d_name, cfg, v);
        }
    }
    free(v);
    sw__symbolizer_destroy(symbolizer);
    symbolizer = NULL;
    if (d != NULL) {
        closedir(d);
    } else if (list_fd >= 0) {
        close(list_fd);
    }
    close(dir_fd);
}
