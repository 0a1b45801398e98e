/*
 * scripted_broker.c - the scripted Kafka broker test double (see scripted_broker.h).
 */
#include "scripted_broker.h"

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "wire/codec.h"
#include "wire/record_batch.h"

#define MAX_CONNS      16
#define CACHED_BATCHES 5 /* a broker remembers the last 5 batches per producer and partition */

typedef struct held {
    uint8_t *buf;
    size_t len;
    int request;    /* index in requests, or -1 (not a Produce response) */
    int64_t due_ms; /* written once due (INT64_MAX: until released) */
} held_t;

typedef struct conn {
    int fd;
    int number;
    uint8_t *in;
    size_t in_len, in_cap;
    held_t held[64];
    int n_held;
    bool holding;
} conn_t;

/* Per partition: the idempotence state of the last producer id seen. */
struct sb_pstate {
    int64_t pid;
    int32_t last_seq; /* last sequence appended, -1 none */
    struct {
        int32_t base, count;
        int64_t offset;
    } cache[CACHED_BATCHES];
    int n_cache;
};
typedef struct sb_pstate pstate_t;

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void sb_lock(sb_broker_t *sb)
{
    pthread_mutex_lock(&sb->lock);
}
void sb_unlock(sb_broker_t *sb)
{
    pthread_mutex_unlock(&sb->lock);
}

static void write_all(int fd, const uint8_t *p, size_t n)
{
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) {
            continue;
        }
        if (w <= 0) {
            return; /* the client went away; its reads will tell it */
        }
        p += w;
        n -= (size_t)w;
    }
}

/* Writes the held responses that are due, in order. */
static void flush_due(sb_broker_t *sb, conn_t *c, int64_t now)
{
    int k = 0;
    while (k < c->n_held && c->held[k].due_ms <= now) {
        write_all(c->fd, c->held[k].buf, c->held[k].len);
        if (c->held[k].request >= 0) {
            sb->requests[c->held[k].request].answered_ms = mono_ms();
        }
        free(c->held[k].buf);
        k++;
    }
    memmove(c->held, c->held + k, sizeof(c->held[0]) * (size_t)(c->n_held - k));
    c->n_held -= k;
}

/* Frames w's body (written after 4 reserved bytes) and queues or writes it. */
static void respond(sb_broker_t *sb, conn_t *c, kp_writer_t *w, int request, int32_t delay_ms)
{
    kp__write_i32_at(w, 0, (int32_t)(w->len - 4));
    size_t len = 0;
    uint8_t *buf = kp__writer_detach(w, &len);
    if (c->holding || c->n_held > 0 || delay_ms > 0) {
        if (c->n_held < 64) {
            int64_t due = c->holding ? INT64_MAX : mono_ms() + delay_ms;
            c->held[c->n_held++] = (held_t){buf, len, request, due};
            return;
        }
    }
    write_all(c->fd, buf, len);
    if (request >= 0) {
        sb->requests[request].answered_ms = mono_ms();
    }
    free(buf);
}

static void release(sb_broker_t *sb, conn_t *c)
{
    for (int i = 0; i < c->n_held; i++) {
        if (c->held[i].due_ms == INT64_MAX) {
            c->held[i].due_ms = 0;
        }
    }
    c->holding = false;
    flush_due(sb, c, mono_ms());
}

static void begin(kp_writer_t *w, int32_t corr)
{
    kp__writer_init_growable(w, 256);
    kp__write_i32(w, 0); /* size, filled by respond() */
    kp__write_i32(w, corr);
}

static void on_api_versions(sb_broker_t *sb, conn_t *c, int16_t version, int32_t corr)
{
    static const int16_t apis[][3] = {{0, 3, 3}, {3, 1, 1}, {18, 0, 3}, {22, 0, 0}};
    kp_writer_t w;
    begin(&w, corr); /* ApiVersions responses always have a v0 header */
    bool flex = version >= 3;
    kp__write_i16(&w, 0);
    kp__write_array_len_v(&w, flex, 4);
    for (int i = 0; i < 4; i++) {
        kp__write_i16(&w, apis[i][0]);
        kp__write_i16(&w, apis[i][1]);
        kp__write_i16(&w, apis[i][2]);
        if (flex) {
            kp__write_tagged_fields_empty(&w);
        }
    }
    if (version >= 1) {
        kp__write_i32(&w, 0);
    }
    if (flex) {
        kp__write_tagged_fields_empty(&w);
    }
    respond(sb, c, &w, -1, 0);
}

static void on_metadata(sb_broker_t *sb, conn_t *c, kp_reader_t *r, int32_t corr)
{
    sb->n_metadata++;
    size_t n = kp__read_array_len(r, false, 2, NULL);
    kp_writer_t w;
    begin(&w, corr);
    kp__write_array_len(&w, 1);
    kp__write_i32(&w, 0);
    kp__write_string(&w, "127.0.0.1", 9);
    kp__write_i32(&w, sb->port);
    kp__write_nullable_string(&w, NULL, 0);
    kp__write_i32(&w, 0); /* controller */
    kp__write_array_len(&w, (int32_t)n);
    for (size_t t = 0; t < n && r->err == 0; t++) {
        char *name = kp__read_str_dup(r, false);
        bool ours = name && strcmp(name, sb->topic) == 0;
        kp__write_i16(&w, ours ? 0 : 3);
        kp__write_string(&w, name ? name : "", name ? strlen(name) : 0);
        kp__write_bool(&w, false);
        kp__write_array_len(&w, ours ? sb->n_partitions : 0);
        bool damage = ours && sb->damage_metadata > 0;
        if (damage) {
            sb->damage_metadata--;
        }
        for (int32_t k = 0; ours && k < sb->n_partitions; k++) {
            kp__write_i16(&w, 0);
            kp__write_i32(&w, damage && k == sb->n_partitions - 1 ? 1000 * sb->n_partitions : k);
            kp__write_i32(&w, 0);
            kp__write_array_len(&w, 1);
            kp__write_i32(&w, 0);
            kp__write_array_len(&w, 1);
            kp__write_i32(&w, 0);
        }
        free(name);
    }
    respond(sb, c, &w, -1, 0);
}

static void on_init_pid(sb_broker_t *sb, conn_t *c, int32_t corr)
{
    sb->n_init_pid++;
    kp_writer_t w;
    begin(&w, corr);
    kp__write_i32(&w, 0);
    kp__write_i16(&w, 0);
    kp__write_i64(&w, sb->next_pid++);
    kp__write_i16(&w, 0);
    respond(sb, c, &w, -1, 0);
}

/* Reads one partition's records into b; returns false when they do not decode. */
static bool read_batch(const uint8_t *data, size_t len, sb_batch_t *b)
{
    kp_record_batch_reader_t rd;
    if (kp__record_batch_reader_open(&rd, data, len, 64u << 20) != 0) {
        return false;
    }
    b->producer_id = rd.producer_id;
    b->producer_epoch = rd.producer_epoch;
    b->base_sequence = rd.base_sequence;
    b->count = rd.record_count;
    kp_record_view_t rec;
    int i = 0;
    while (kp__record_batch_reader_next(&rd, &rec) == 1) {
        if (i < SB_MAX_IDS) {
            char tmp[32] = {0};
            size_t n = rec.value_len > 0 ? (size_t)rec.value_len : 0;
            memcpy(tmp, rec.value, n < sizeof(tmp) - 1 ? n : sizeof(tmp) - 1);
            b->ids[i] = strtol(tmp, NULL, 10);
        }
        i++;
    }
    kp__record_batch_reader_close(&rd);
    return true;
}

/* The broker's idempotence check and append for a batch not answered by the script. */
static void append(sb_broker_t *sb, sb_batch_t *b)
{
    int32_t k = b->partition;
    pstate_t *s = &sb->pstates[k];
    if (b->producer_id >= 0) {
        if (s->pid != b->producer_id) {
            /* Like Kafka's ProducerStateManager: a producer id the partition has no state
             * for may start at any sequence. */
            s->pid = b->producer_id;
            s->last_seq = b->base_sequence - 1;
            s->n_cache = 0;
        }
        for (int i = 0; i < s->n_cache; i++) {
            if (s->cache[i].base == b->base_sequence && s->cache[i].count == b->count) {
                b->error = 46; /* DUPLICATE_SEQUENCE_NUMBER */
                b->offset = s->cache[i].offset;
                return;
            }
        }
        if (b->base_sequence != s->last_seq + 1) {
            b->error = 45; /* OUT_OF_ORDER_SEQUENCE_NUMBER */
            b->offset = -1;
            return;
        }
        s->last_seq = b->base_sequence + b->count - 1;
        if (s->n_cache == CACHED_BATCHES) {
            memmove(&s->cache[0], &s->cache[1], sizeof(s->cache[0]) * (CACHED_BATCHES - 1));
            s->n_cache--;
        }
        s->cache[s->n_cache].base = b->base_sequence;
        s->cache[s->n_cache].count = b->count;
        s->cache[s->n_cache].offset = sb->log_len[k];
        s->n_cache++;
    }
    b->error = 0;
    b->offset = sb->log_len[k];
    for (int32_t i = 0; i < b->count && sb->log_len[k] < SB_MAX_LOG; i++) {
        sb->log[k][sb->log_len[k]++] = i < SB_MAX_IDS ? b->ids[i] : -1;
    }
}

static void write_produce_response(sb_broker_t *sb, conn_t *c, sb_request_t *q, int32_t corr)
{
    kp_writer_t w;
    begin(&w, q->damage == SB_DAMAGE_CORRELATION ? corr + 1 : corr);
    int n = q->n;
    if (q->damage == SB_DAMAGE_MISSING_PARTITION) {
        n--;
    }
    bool extra = q->damage == SB_DAMAGE_EXTRA_PARTITION;
    kp__write_array_len(&w, 1);
    kp__write_string(&w, sb->topic, strlen(sb->topic));
    kp__write_array_len(&w, n + (extra ? 1 : 0));
    for (int i = 0; i < n; i++) {
        kp__write_i32(&w, q->batches[i].partition);
        kp__write_i16(&w,
                      q->damage == SB_DAMAGE_UNKNOWN_ERROR && i == 0 ? 12345 : q->batches[i].error);
        kp__write_i64(&w, q->batches[i].offset);
        kp__write_i64(&w, -1);
    }
    if (extra) {
        kp__write_i32(&w, sb->n_partitions); /* a partition nobody asked about */
        kp__write_i16(&w, 0);
        kp__write_i64(&w, 0);
        kp__write_i64(&w, -1);
    }
    kp__write_i32(&w, q->throttle_ms);
    if (q->damage == SB_DAMAGE_TRUNCATED) {
        w.len -= 6;
    }
    respond(sb, c, &w, q->index, q->delay_ms);
}

/* Returns false when the connection is to be closed. */
static bool on_produce(sb_broker_t *sb, conn_t *c, kp_reader_t *r, int32_t corr)
{
    if (sb->n_requests == SB_MAX_REQUESTS) {
        return false;
    }
    sb_request_t *q = &sb->requests[sb->n_requests];
    memset(q, 0, sizeof(*q));
    q->index = sb->n_requests++;
    q->conn = c->number;
    q->at_ms = mono_ms();
    q->answered_ms = -1;
    const char *s;
    size_t sl;
    kp__read_nullable_str(r, false, &s, &sl);
    q->acks = kp__read_i16(r);
    kp__read_i32(r);
    size_t nt = kp__read_array_len(r, false, 2, NULL);
    for (size_t t = 0; t < nt && r->err == 0; t++) {
        kp__read_str(r, false, &s, &sl);
        size_t np = kp__read_array_len(r, false, 8, NULL);
        for (size_t k = 0; k < np && r->err == 0 && q->n < SB_MAX_PARTITIONS; k++) {
            sb_batch_t *b = &q->batches[q->n++];
            b->partition = kp__read_i32(r);
            const uint8_t *data = NULL;
            size_t len = 0;
            kp__read_nullable_bytes(r, false, &data, &len);
            if (r->err || b->partition < 0 || b->partition >= sb->n_partitions ||
                !read_batch(data, len, b)) {
                return false;
            }
        }
    }
    if (r->err) {
        return false;
    }
    if (sb->script) {
        sb->script(sb->script_arg, sb, q);
    }
    for (int i = 0; i < q->n; i++) {
        sb_batch_t *b = &q->batches[i];
        if (b->inject) {
            b->error = b->inject;
            b->offset = -1;
        } else {
            append(sb, b);
        }
    }
    if (q->action == SB_DISCONNECT) {
        return false;
    }
    if (q->acks == 0) {
        return true;
    }
    if (q->action == SB_HOLD) {
        c->holding = true;
    }
    write_produce_response(sb, c, q, corr);
    if (q->action == SB_RELEASE) {
        release(sb, c);
    }
    return true;
}

/* Handles one request frame; returns false to close the connection. */
static bool on_frame(sb_broker_t *sb, conn_t *c, const uint8_t *frame, size_t len)
{
    kp_reader_t r;
    kp__reader_init(&r, frame, len);
    int16_t api = kp__read_i16(&r);
    int16_t version = kp__read_i16(&r);
    int32_t corr = kp__read_i32(&r);
    const char *s;
    size_t sl;
    kp__read_nullable_str(&r, false, &s, &sl); /* client id (never compact) */
    if (api == 18 && version >= 3) {
        kp__read_tagged_fields_skip(&r);
    }
    if (r.err) {
        return false;
    }
    switch (api) {
    case 18:
        on_api_versions(sb, c, version, corr);
        return true;
    case 3:
        on_metadata(sb, c, &r, corr);
        return true;
    case 22:
        on_init_pid(sb, c, corr);
        return true;
    case 0:
        return on_produce(sb, c, &r, corr);
    default:
        return false;
    }
}

static void conn_close(conn_t *c)
{
    close(c->fd);
    c->fd = -1;
    for (int i = 0; i < c->n_held; i++) {
        free(c->held[i].buf);
    }
    c->n_held = 0;
    c->holding = false;
    free(c->in);
    c->in = NULL;
    c->in_len = c->in_cap = 0;
}

/* Reads what is there and handles complete frames; returns false when closed. */
static bool conn_read(sb_broker_t *sb, conn_t *c)
{
    if (c->in_cap - c->in_len < 65536) {
        c->in_cap = c->in_cap * 2 + 65536;
        c->in = realloc(c->in, c->in_cap);
    }
    ssize_t n = recv(c->fd, c->in + c->in_len, c->in_cap - c->in_len, 0);
    if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) {
        sb->n_closed_by_client++;
        return false;
    }
    if (n < 0) {
        return true;
    }
    c->in_len += (size_t)n;
    size_t off = 0;
    while (c->in_len - off >= 4) {
        uint32_t size = (uint32_t)c->in[off] << 24 | (uint32_t)c->in[off + 1] << 16 |
                        (uint32_t)c->in[off + 2] << 8 | c->in[off + 3];
        if (c->in_len - off - 4 < size) {
            break;
        }
        if (!on_frame(sb, c, c->in + off + 4, size)) {
            return false;
        }
        off += 4 + size;
    }
    memmove(c->in, c->in + off, c->in_len - off);
    c->in_len -= off;
    return true;
}

static void *run(void *arg)
{
    sb_broker_t *sb = arg;
    conn_t conns[MAX_CONNS];
    int n = 0;
    for (;;) {
        struct pollfd pf[MAX_CONNS + 2];
        pf[0] = (struct pollfd){.fd = sb->stop_fd, .events = POLLIN};
        pf[1] = (struct pollfd){.fd = sb->listen_fd, .events = POLLIN};
        for (int i = 0; i < n; i++) {
            pf[2 + i] = (struct pollfd){.fd = conns[i].fd, .events = POLLIN};
        }
        if (poll(pf, (nfds_t)(2 + n), 2) < 0 && errno != EINTR) {
            break;
        }
        if (pf[0].revents) {
            break;
        }
        sb_lock(sb);
        for (int i = 0; i < n; i++) {
            flush_due(sb, &conns[i], mono_ms());
        }
        for (int i = 0; i < n; i++) {
            if (pf[2 + i].revents && !conn_read(sb, &conns[i])) {
                conn_close(&conns[i]);
            }
        }
        int k = 0;
        for (int i = 0; i < n; i++) {
            if (conns[i].fd >= 0) {
                conns[k++] = conns[i];
            }
        }
        n = k;
        if (pf[1].revents & POLLIN) {
            int fd = accept(sb->listen_fd, NULL, NULL);
            if (fd >= 0 && n < MAX_CONNS) {
                memset(&conns[n], 0, sizeof(conns[n]));
                conns[n].fd = fd;
                conns[n].number = sb->n_conns++;
                n++;
            } else if (fd >= 0) {
                close(fd);
            }
        }
        sb_unlock(sb);
    }
    for (int i = 0; i < n; i++) {
        conn_close(&conns[i]);
    }
    return NULL;
}

sb_broker_t *sb_start(const char *topic, int32_t n_partitions, sb_script_fn script, void *arg)
{
    cr_assert(n_partitions > 0 && n_partitions <= SB_MAX_PARTITIONS);
    sb_broker_t *sb = calloc(1, sizeof(*sb));
    cr_assert_not_null(sb);
    sb->pstates = calloc(SB_MAX_PARTITIONS, sizeof(pstate_t));
    for (int i = 0; i < SB_MAX_PARTITIONS; i++) {
        sb->pstates[i].pid = -1;
        sb->pstates[i].last_seq = -1;
        sb->log[i] = calloc(SB_MAX_LOG, sizeof(long));
    }
    sb->requests = calloc(SB_MAX_REQUESTS, sizeof(sb_request_t));
    snprintf(sb->topic, sizeof(sb->topic), "%s", topic);
    sb->n_partitions = n_partitions;
    sb->script = script;
    sb->script_arg = arg;
    sb->next_pid = 1000;
    pthread_mutex_init(&sb->lock, NULL);
    sb->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof(a);
    cr_assert(sb->listen_fd >= 0 && bind(sb->listen_fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
                  listen(sb->listen_fd, 16) == 0 &&
                  getsockname(sb->listen_fd, (struct sockaddr *)&a, &al) == 0,
              "scripted broker: cannot listen: %s", strerror(errno));
    sb->port = ntohs(a.sin_port);
    snprintf(sb->bootstrap, sizeof(sb->bootstrap), "127.0.0.1:%d", sb->port);
    sb->stop_fd = eventfd(0, EFD_CLOEXEC);
    cr_assert(sb->stop_fd >= 0);
    cr_assert_eq(pthread_create(&sb->thread, NULL, run, sb), 0);
    return sb;
}

void sb_stop(sb_broker_t *sb)
{
    uint64_t one = 1;
    cr_assert_eq(write(sb->stop_fd, &one, sizeof(one)), (ssize_t)sizeof(one));
    pthread_join(sb->thread, NULL);
    close(sb->stop_fd);
    close(sb->listen_fd);
    for (int i = 0; i < SB_MAX_PARTITIONS; i++) {
        free(sb->log[i]);
    }
    free(sb->requests);
    free(sb->pstates);
    pthread_mutex_destroy(&sb->lock);
    free(sb);
}
