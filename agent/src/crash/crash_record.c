/*
 * crash_record.c - what the crash handler writes (signal context).
 *
 * EVERY function in this file runs in a signal handler, possibly on a thread that crashed
 * inside the agent or inside malloc: async-signal-safe calls only (clock_gettime, getpid,
 * syscall), no malloc, no stdio, no locks, no thread-locals (a dynamic-TLS variable may not be
 * allocated yet for the thread: the context is found through the slot table by thread id
 * instead). Memory is the spool mapping and this stack (the alternate one, 64 KiB).
 *
 * A segment is read, never written: each string pointer is used only when it lies in the
 * segment's own arena or in the agent's image (its literals), and is measured with a bound;
 * counts are checked against the block's limits. A segment another thread is changing may
 * still be read in a torn state (best effort, docs/CRASH.md); it cannot make the reads leave
 * the block. The bytes are the SegmentObject the agent's encoder would write for the same
 * spans (protobuf field order), through the inline backward writer of encode/pb_reverse.h,
 * which allocates nothing.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <execinfo.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "../encode/pb_reverse.h"
#include "../encode/segment_fields.h"
#include "crash_internal.h"

#define STR_MAX     65536u    /* longest string read from a segment */
#define SPAN_IDS    10000u    /* SW_AGENT_SPAN_LIMIT's maximum */
#define FRAME_PLACE "@frames" /* the stack log value the shipper replaces (crash_ship.c) */

/* Signal context. */
int32_t sw__crash_gettid(void)
{
    return (int32_t)syscall(SYS_gettid);
}

/* A segment checked enough to be read without leaving its block. */
typedef struct view {
    const sw__segment_t *seg;
    const sw__span_t *spans;
    const char *arena;
    uint32_t arena_cap, span_count, attr_count, ref_count;
} view_t;

/* What one crash writes into every segment it ends. */
typedef struct crash_info {
    int64_t ms;
    const char *kind; /* "SIGSEGV" */
    const char *message;
    size_t message_len;
    bool stack; /* the crashing thread's segments carry the frames (placeholder) */
} crash_info_t;

/* Signal context. */
static size_t bounded_len(const char *p, size_t max)
{
    size_t n = 0;
    while (n < max && p[n] != '\0') {
        n++;
    }
    return n;
}

/* Signal context. A string of the segment: its bytes when the pointer is in the arena or in
   the agent's image, else "" (NULL included). */
static const char *safe_str(const view_t *v, const char *p, size_t *n)
{
    uintptr_t a = (uintptr_t)p, lo = (uintptr_t)v->arena, hi = lo + v->arena_cap;
    /* relaxed: set before the handlers were installed; same value at every refresh. */
    uintptr_t slo = atomic_load_explicit(&sw__crash.self_lo, memory_order_relaxed);
    uintptr_t shi = atomic_load_explicit(&sw__crash.self_hi, memory_order_relaxed);
    size_t max = 0;
    if (p != NULL && a >= lo && a < hi) {
        max = hi - a;
    } else if (p != NULL && a >= slo && a < shi) {
        max = shi - a;
    }
    *n = max != 0 ? bounded_len(p, max < STR_MAX ? max : STR_MAX) : 0;
    return *n != 0 ? p : "";
}

/* Signal context. */
static bool view_make(const sw__segment_t *seg, view_t *v)
{
    if (seg == NULL || ((uintptr_t)seg & 7u) != 0) {
        return false;
    }
    uint32_t limit = seg->span_limit, cap = seg->arena_cap;
    v->seg = seg;
    v->spans = seg->spans;
    v->arena = seg->arena;
    v->arena_cap = cap;
    v->span_count = seg->span_count;
    v->attr_count = seg->attr_count;
    v->ref_count = seg->ref_count;
    uintptr_t lo = (uintptr_t)seg;
    uintptr_t hi = lo + sizeof *seg + (size_t)SPAN_IDS * sizeof(sw__span_t) + cap + 64;
    if (limit == 0 || limit > SPAN_IDS || cap > (1u << 24) || v->span_count > limit ||
        v->span_count == 0 || v->ref_count > SW__REFS_MAX ||
        (size_t)v->attr_count * sizeof(sw__attr_t) > cap) {
        return false;
    }
    uintptr_t s = (uintptr_t)v->spans, a = (uintptr_t)v->arena;
    return s > lo && s + (size_t)v->span_count * sizeof(sw__span_t) <= hi && a > lo &&
           a + cap <= hi;
}

/* Signal context. */
static const sw__attr_t *attr_at(const view_t *v, uint32_t i)
{
    const sw__attr_t *end = (const sw__attr_t *)(const void *)(v->arena + v->arena_cap);
    return end - 1 - i;
}

/* Signal context. */
static void kv_put(sw__pbr_t *w, unsigned field, const char *k, size_t kn, const char *val,
                   size_t vn)
{
    uint8_t *mark = sw__pbr_mark(w);
    if (vn != 0) {
        sw__pbr_string_n(w, SW__PB_KV_VALUE, val, vn);
    }
    if (kn != 0) {
        sw__pbr_string_n(w, SW__PB_KV_KEY, k, kn);
    }
    sw__pbr_close(w, field, mark);
}

/* Signal context. */
static void attr_kv_put(sw__pbr_t *w, const view_t *v, unsigned field, const sw__attr_t *a)
{
    size_t kn, vn;
    const char *k = safe_str(v, a->key, &kn), *val = safe_str(v, a->value, &vn);
    kv_put(w, field, k, kn, val, vn);
}

/* Signal context. The span's recorded logs, last first. */
static void logs_put(sw__pbr_t *w, const view_t *v, uint32_t id)
{
    for (uint32_t i = v->attr_count; i-- > 0;) {
        const sw__attr_t *log = attr_at(v, i);
        if (log->kind != SW__ATTR_LOG || log->span_id != id) {
            continue;
        }
        uint32_t last = log->kv_count > v->attr_count ? v->attr_count : log->kv_count;
        last = i + last >= v->attr_count ? v->attr_count - 1 : i + last;
        uint8_t *mark = sw__pbr_mark(w);
        for (uint32_t k = last; k > i; k--) {
            if (attr_at(v, k)->kind == SW__ATTR_LOG_KV) {
                attr_kv_put(w, v, SW__PB_LOG_DATA, attr_at(v, k));
            }
        }
        sw__pbr_int64(w, SW__PB_LOG_TIME, log->time_ms);
        sw__pbr_close(w, SW__PB_SPAN_LOGS, mark);
    }
}

/* Signal context. The crash log {event, error.kind, message, stack}, written backwards. */
static void crash_log_put(sw__pbr_t *w, const crash_info_t *ci)
{
    uint8_t *mark = sw__pbr_mark(w);
    if (ci->stack) {
        kv_put(w, SW__PB_LOG_DATA, "stack", 5, FRAME_PLACE, sizeof FRAME_PLACE - 1);
    }
    kv_put(w, SW__PB_LOG_DATA, "message", 7, ci->message, ci->message_len);
    kv_put(w, SW__PB_LOG_DATA, "error.kind", 10, ci->kind, bounded_len(ci->kind, 16));
    kv_put(w, SW__PB_LOG_DATA, "event", 5, "error", 5);
    sw__pbr_int64(w, SW__PB_LOG_TIME, ci->ms);
    sw__pbr_close(w, SW__PB_SPAN_LOGS, mark);
}

/* Signal context. */
static void ref_put(sw__pbr_t *w, const view_t *v, const sw__ref_t *r)
{
    size_t n;
    const char *s;
    uint8_t *mark = sw__pbr_mark(w);
    const char *strs[6] = {r->address,        r->parent_endpoint,   r->parent_instance,
                           r->parent_service, r->parent_segment_id, r->trace_id};
    const unsigned fields[6] = {8, 7, 6, 5, 3, 2};
    for (int i = 0; i < 6; i++) {
        if (i == 4) {
            sw__pbr_int32(w, 4, r->parent_span_id);
        }
        s = safe_str(v, strs[i], &n);
        if (n != 0) {
            sw__pbr_string_n(w, fields[i], s, n);
        }
    }
    sw__pbr_int32(w, 1, r->type);
    sw__pbr_close(w, SW__PB_SPAN_REFS, mark);
}

/* Signal context. One SpanObject; `open` spans end now, as errors, with the crash log. */
static void span_put(sw__pbr_t *w, const view_t *v, uint32_t id, bool open, const crash_info_t *ci)
{
    const sw__span_t *sp = &v->spans[id];
    uint8_t *mark = sw__pbr_mark(w);
    size_t n;
    const char *s;
    sw__pbr_bool(w, SW__PB_SPAN_SKIP, sp->reserved != 0);
    if (open) {
        crash_log_put(w, ci);
    }
    logs_put(w, v, id);
    for (uint32_t i = v->attr_count; i-- > 0;) {
        const sw__attr_t *a = attr_at(v, i);
        if (a->kind == SW__ATTR_TAG && a->span_id == id) {
            attr_kv_put(w, v, SW__PB_SPAN_TAGS, a);
        }
    }
    sw__pbr_bool(w, SW__PB_SPAN_ERROR, open || sp->is_error != 0);
    sw__pbr_int32(w, SW__PB_SPAN_COMPONENT, sp->component_id);
    sw__pbr_int32(w, SW__PB_SPAN_LAYER, sp->layer);
    sw__pbr_int32(w, SW__PB_SPAN_TYPE, sp->type);
    s = safe_str(v, sp->peer, &n);
    if (n != 0) {
        sw__pbr_string_n(w, SW__PB_SPAN_PEER, s, n);
    }
    s = safe_str(v, sp->operation, &n);
    sw__pbr_string_n(w, SW__PB_SPAN_OP, n != 0 ? s : "?", n != 0 ? n : 1);
    for (uint32_t r = v->ref_count; r-- > 0;) {
        if (v->seg->refs[r].span_id == id) {
            ref_put(w, v, &v->seg->refs[r]);
        }
    }
    int64_t end = open || sp->end_ms == SW__SPAN_OPEN ? ci->ms : sp->end_ms;
    sw__pbr_int64(w, SW__PB_SPAN_END, end);
    sw__pbr_int64(w, SW__PB_SPAN_START, sp->start_ms);
    sw__pbr_int32(w, SW__PB_SPAN_PARENT, sp->parent_id);
    sw__pbr_int32(w, SW__PB_SPAN_ID, (int32_t)id);
    sw__pbr_close(w, SW__PB_SEGMENT_SPANS, mark);
}

/* Signal context. Writes decimal v at p; returns the end. */
static char *dec_put(char *p, int64_t v)
{
    char tmp[24];
    int n = 0;
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    do {
        tmp[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u != 0);
    if (v < 0) {
        *p++ = '-';
    }
    while (n > 0) {
        *p++ = tmp[--n];
    }
    return p;
}

/* Signal context. */
static char *hex_put(char *p, uint64_t v)
{
    static const char digits[] = "0123456789abcdef";
    char tmp[16];
    int n = 0;
    do {
        tmp[n++] = digits[v & 15u];
        v >>= 4;
    } while (v != 0);
    *p++ = '0';
    *p++ = 'x';
    while (n > 0) {
        *p++ = tmp[--n];
    }
    return p;
}

/* Signal context. An id for a segment that never needed one before the crash (segment.h:
   ids are made lazily): "crash.<pid>.<tid>.<ms>.<n>". */
static size_t id_make(char *out, int32_t tid, int64_t ms, uint32_t n)
{
    char *p = out;
    memcpy(p, "crash.", 6);
    p = dec_put(p + 6, getpid());
    *p++ = '.';
    p = dec_put(p, tid);
    *p++ = '.';
    p = dec_put(p, ms);
    *p++ = '.';
    p = dec_put(p, n);
    return (size_t)(p - out);
}

/* Signal context. A SegmentObject of the view into [start, end): returns its first byte, or
   NULL when it did not fit. */
static uint8_t *segment_put(uint8_t *start, uint8_t *end, const view_t *v, int32_t active,
                            const crash_info_t *ci, int32_t tid, uint32_t n)
{
    uint8_t open[SPAN_IDS / 8 + 1];
    memset(open, 0, (v->span_count + 7u) / 8u);
    for (uint32_t i = 0; i < v->span_count; i++) {
        if (v->spans[i].end_ms == SW__SPAN_OPEN) {
            open[i / 8] |= (uint8_t)(1u << (i % 8));
        }
    }
    for (uint32_t k = 0; k < v->span_count && active >= 0 && (uint32_t)active < v->span_count;
         k++) { /* the stack API's open spans: the active one and its parents */
        open[active / 8] |= (uint8_t)(1u << (active % 8));
        active = v->spans[active].parent_id;
    }
    sw__pbr_t w = {start, end, false};
    sw__pbr_bool(&w, SW__PB_SEGMENT_SIZE_LIMITED, v->seg->size_limited);
    const sw__crash_header_t *h = (const sw__crash_header_t *)(const void *)sw__crash.map;
    if (h->instance_len != 0) {
        sw__pbr_string_n(&w, SW__PB_SEGMENT_INSTANCE, h->instance, h->instance_len);
    }
    sw__pbr_string_n(&w, SW__PB_SEGMENT_SERVICE, h->service, h->service_len);
    for (uint32_t i = v->span_count; i-- > 0;) {
        span_put(&w, v, i, (open[i / 8] >> (i % 8)) & 1u, ci);
    }
    char made[96];
    size_t id_len = bounded_len(v->seg->segment_id, sizeof v->seg->segment_id - 1);
    const char *id = v->seg->segment_id;
    if (id_len == 0) {
        id_len = id_make(made, tid, ci->ms, n);
        id = made;
    }
    sw__pbr_string_n(&w, SW__PB_SEGMENT_SEGMENT_ID, id, id_len);
    /* No trace id yet either (made lazily too): the segment's id serves as the trace's. */
    size_t trace_len = bounded_len(v->seg->trace_id, sizeof v->seg->trace_id - 1);
    sw__pbr_string_n(&w, SW__PB_SEGMENT_TRACE_ID, trace_len != 0 ? v->seg->trace_id : id,
                     trace_len != 0 ? trace_len : id_len);
    return w.overflow ? NULL : w.p;
}

/* Signal context. Where the next segment record goes, and the spool's end. */
typedef struct cursor {
    uint8_t *body;
    uint8_t *at;
    uint8_t *end;
    uint32_t count;
} cursor_t;

/* Signal context. Appends the context's segment (if it has one in this run) as a record;
   false when it has none, or it did not fit, or (another thread's) it changed while it was
   read. */
static bool context_put_once(cursor_t *cur, sw__context_t *c, const crash_info_t *ci, int32_t tid,
                             uint32_t flags)
{
    sw__segment_t *seg = c->segment;
    int32_t active = c->active;
    view_t v;
    if (!view_make(seg, &v)) {
        return false;
    }
    uint8_t *start = cur->at + 8,
            *first = segment_put(start, cur->end, &v, active, ci, tid, cur->count);
    if (first == NULL) {
        return false; /* does not fit: the spool keeps what came before */
    }
    if ((flags & SW__CRASH_SEG_CRASHING) == 0 &&
        (c->segment != seg || c->active != active || seg->span_count != v.span_count)) {
        return false; /* the thread moved on while it was read: a torn copy is not kept */
    }
    uint32_t len = (uint32_t)(cur->end - first);
    memmove(start, first, len);
    uint32_t padded = (len + 7u) & ~7u;
    memset(start + len, 0, padded - len);
    memcpy(cur->at, &len, 4);
    memcpy(cur->at + 4, &flags, 4);
    cur->at = start + padded;
    cur->count++;
    return true;
}

/* Signal context. context_put_once, a few times for a thread that keeps running. */
static void context_put(cursor_t *cur, sw__context_t *c, const crash_info_t *ci, int32_t tid,
                        uint32_t flags)
{
    /* relaxed: compared with the run the context joined (context.h). */
    uint32_t epoch = atomic_load_explicit(&sw__epoch, memory_order_relaxed);
    for (int attempt = 0; attempt < 4; attempt++) {
        if (c == NULL || epoch == 0 || c->epoch != epoch ||
            cur->count >= SW__CRASH_VIEW_SEGMENTS_MAX || cur->end - cur->at < 64 ||
            context_put_once(cur, c, ci, tid, flags) || (flags & SW__CRASH_SEG_CRASHING) != 0) {
            return;
        }
    }
}

/* Signal context. Makes what was written so far the spool's content: lengths, checksum. */
static void commit(sw__crash_header_t *h, const cursor_t *cur)
{
    h->segment_count = cur->count;
    h->body_bytes = (uint32_t)(cur->at - cur->body);
    h->state = SW__CRASH_RECORDED;
    h->checksum = 0;
    uint64_t sum = sw__fnv1a(SW__FNV_START, sw__crash.map, SW__CRASH_HEADER_BYTES);
    sum = sw__fnv1a(sum, cur->body, h->body_bytes);
    h->checksum = sum;
}

/* Signal context. The interrupted program counter, 0 when unknown. */
static uint64_t fault_pc(const void *ucontext)
{
    const ucontext_t *uc = ucontext;
    if (uc == NULL) {
        return 0;
    }
#if defined(__x86_64__)
    return (uint64_t)uc->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__)
    return (uint64_t)uc->uc_mcontext.pc;
#else
    return 0;
#endif
}

/*
 * Signal context. The crashing thread's frames, top first: the interrupted pc, then what the
 * unwinder finds past the signal frame. glibc's backtrace was called once at arm, so libgcc's
 * unwinder is loaded (its first call dlopens it); it then finds unwind tables through
 * _dl_find_object (lock-free, glibc >= 2.35). A fault while unwinding a wrecked stack ends
 * the process by default: the frames are the last thing recorded.
 */
static uint32_t frames_get(const void *ucontext, uint64_t *out)
{
    void *raw[SW__CRASH_FRAMES_MAX + 16];
    uint64_t pc = fault_pc(ucontext);
    int n = backtrace(raw, (int)(sizeof raw / sizeof raw[0]));
    int from = n;
    for (int i = 0; i < n; i++) {
        if ((uint64_t)(uintptr_t)raw[i] == pc) {
            from = i + 1;
            break;
        }
    }
    uint32_t count = 0;
    if (pc != 0) {
        out[count++] = pc;
    }
    for (int i = from; i < n && count < SW__CRASH_FRAMES_MAX; i++) {
        out[count++] = (uint64_t)(uintptr_t)raw[i];
    }
    return count;
}

/* Signal context. */
static void frames_put(uint8_t *region, const sw__crash_modtab_t *t, const uint64_t *pcs,
                       uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        sw__crash_frame_t f = {UINT32_MAX, 0, pcs[i]};
        for (uint32_t m = 0; m < t->count; m++) {
            if (pcs[i] >= t->mods[m].lo && pcs[i] < t->mods[m].hi) {
                f.module = m;
                f.offset = pcs[i] - t->mods[m].base;
                break;
            }
        }
        memcpy(region + i * sizeof f, &f, sizeof f);
    }
}

/* Signal context. "fault address 0x0, si_code 1", or for a signal sent by kill, raise or abort
   (no fault address): "sent by process 42, si_code -6". */
static size_t message_make(char *out, const siginfo_t *si)
{
    char *p = out;
    if (si != NULL && si->si_code <= 0) {
        memcpy(p, "sent by process ", 16);
        p = dec_put(p + 16, si->si_pid);
    } else {
        memcpy(p, "fault address ", 14);
        p = hex_put(p + 14, si != NULL ? (uint64_t)(uintptr_t)si->si_addr : 0);
    }
    memcpy(p, ", si_code ", 10);
    p = dec_put(p + 10, si != NULL ? si->si_code : 0);
    return (size_t)(p - out);
}

/* Signal context. The fault address; 0 for a sent signal (si_addr is not set then). */
static uint64_t fault_addr(const siginfo_t *si)
{
    return si != NULL && si->si_code > 0 ? (uint64_t)(uintptr_t)si->si_addr : 0;
}

void sw__crash_record(int signo, const siginfo_t *si, const void *ucontext, int32_t tid)
{
    /* Signal context (see the top of this file). */
    sw__crash_header_t *h = (sw__crash_header_t *)(void *)sw__crash.map;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    char message[128];
    crash_info_t ci = {(int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000,
                       sw__crash_signal_name(signo), message, message_make(message, si), true};
    h->signo = signo;
    h->si_code = si != NULL ? si->si_code : 0;
    h->fault_addr = fault_addr(si);
    h->time_ms = ci.ms;
    h->tid = (uint32_t)tid;
    h->frame_count = 0;
    /* acquire: partner of the refresher's release (crash_modules.c). */
    const sw__crash_modtab_t *t =
        &sw__crash.tabs[atomic_load_explicit(&sw__crash.active, memory_order_acquire)];
    cursor_t cur = {sw__crash.map + SW__CRASH_HEADER_BYTES, NULL,
                    sw__crash.map + SW__CRASH_SPOOL_BYTES, 0};
    memcpy(cur.body, t->image, t->bytes);
    h->module_count = t->count;
    h->module_bytes = t->bytes;
    uint8_t *frames = cur.body + t->bytes;
    memset(frames, 0, SW__CRASH_FRAMES_MAX * sizeof(sw__crash_frame_t));
    cur.at = frames + SW__CRASH_FRAMES_MAX * sizeof(sw__crash_frame_t);

    /* 1. The crashing thread. acquire: partner of the slot's release store (crash_handler.c). */
    for (uint32_t i = 0; i < SW__CRASH_SLOTS; i++) {
        if (atomic_load_explicit(&sw__crash.slots[i].tid, memory_order_acquire) == tid) {
            context_put(&cur, atomic_load_explicit(&sw__crash.slots[i].ctx, memory_order_relaxed),
                        &ci, tid, SW__CRASH_SEG_CRASHING);
            break;
        }
    }
    commit(h, &cur);

    /* 2. Best effort: the other threads' open segments, while those threads run on. */
    ci.stack = false;
    for (uint32_t i = 0; i < SW__CRASH_SLOTS; i++) {
        int32_t other = atomic_load_explicit(&sw__crash.slots[i].tid, memory_order_acquire);
        if (other > 0 && other != tid) {
            context_put(&cur, atomic_load_explicit(&sw__crash.slots[i].ctx, memory_order_relaxed),
                        &ci, other, 0);
        }
    }
    commit(h, &cur);

    /* 3. The frames (the unwinder may fault on a wrecked stack: last). */
    uint64_t pcs[SW__CRASH_FRAMES_MAX];
    uint32_t n = frames_get(ucontext, pcs);
    frames_put(frames, t, pcs, n);
    h->frame_count = n;
    commit(h, &cur);
}
