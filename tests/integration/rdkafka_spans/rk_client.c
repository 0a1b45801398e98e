/*
 * rk_client.c - an ordinary librdkafka program (linked dynamically, no agent code) for the
 * librdkafka span tests: test_rdkafka_spans runs it with and without libskywalking-preload.so.
 *
 *   rk_client BOOTSTRAP TOPIC produce API COUNT
 *       API: producev, produceva, produce, headers (producev with an RD_KAFKA_VTYPE_HEADERS
 *       object holding app=1), header (producev with an RD_KAFKA_VTYPE_HEADER app=1), batch
 *       (rd_kafka_produce_batch). Creates TOPIC (1 partition) first; exits 0 when every message
 *       was delivered.
 *   rk_client BOOTSTRAP TOPIC consume API COUNT GROUP [REPLY_TOPIC]
 *       API: poll (subscribe + rd_kafka_consumer_poll, group GROUP), consume (rd_kafka_consume
 *       on partition 0), batch (rd_kafka_consume_batch), callback (rd_kafka_consume_callback);
 *       reads COUNT messages from the start of TOPIC and prints each one's headers as
 *       "hdr <n> <name>=<value>" lines (values of other bytes as '?'). With REPLY_TOPIC (callback
 *       only) every message is answered there from inside the callback. Exits 0 after COUNT.
 *   rk_client BOOTSTRAP TOPIC mt THREADS COUNT
 *       THREADS threads produce COUNT messages each (rd_kafka_producev) on one client at once.
 *   rk_client BOOTSTRAP TOPIC missing
 *       TOPIC does not exist (the broker does not create topics): a produce fails at once once
 *       librdkafka knows it; exits 0 when it did.
 *   rk_client BOOTSTRAP TOPIC badpart
 *       Every produce API asks for a partition that does not exist: each call must fail at once
 *       (UNKNOWN_PARTITION; errno ESRCH for rd_kafka_produce); prints one line per API. Then one
 *       message each with an RD_KAFKA_VTYPE_HEADERS object and an RD_KAFKA_VTYPE_HEADER, both
 *       delivered.
 *   rk_client BOOTSTRAP TOPIC create
 *       Creates TOPIC (1 partition) unless it exists.
 *   rk_client BOOTSTRAP TOPIC dump FILE
 *       Copies every record of TOPIC into FILE as varint length + value (the segment file
 *       format, for the agent's own Kafka reporter topic).
 *   rk_client BOOTSTRAP TOPIC raw SW8...
 *       One message per argument, with that value as its sw8 header ("-": no headers at all,
 *       "NUL": a value with a NUL byte, "LONG": 5000 bytes), for the hostile-input tests.
 *
 * Every wait is bounded (30 s); any failure prints why on stderr and exits 1.
 */
#include <errno.h>
#include <librdkafka/rdkafka.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define WAIT_MS 30000

static const char *bootstrap;
/* Delivery reports run on the thread that calls rd_kafka_flush / rd_kafka_poll: the main
   thread only. */
static int delivered, failed;

static void die(const char *what, const char *why)
{
    fprintf(stderr, "rk_client: %s: %s\n", what, why);
    exit(1);
}

static void dr_cb(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
    (void)rk, (void)opaque;
    if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
        fprintf(stderr, "rk_client: delivery failed: %s\n", rd_kafka_err2str(m->err));
        failed++;
    } else {
        delivered++;
    }
}

static rd_kafka_t *client(rd_kafka_type_t type, const char *group)
{
    char err[512];
    rd_kafka_conf_t *c = rd_kafka_conf_new();
    if (rd_kafka_conf_set(c, "bootstrap.servers", bootstrap, err, sizeof err) != 0 ||
        rd_kafka_conf_set(c, "topic.metadata.propagation.max.ms", "10", err, sizeof err) != 0 ||
        (group != NULL && rd_kafka_conf_set(c, "group.id", group, err, sizeof err) != 0) ||
        (group != NULL &&
         rd_kafka_conf_set(c, "auto.offset.reset", "earliest", err, sizeof err) != 0)) {
        die("conf", err);
    }
    rd_kafka_conf_set_dr_msg_cb(c, dr_cb);
    rd_kafka_t *rk = rd_kafka_new(type, c, err, sizeof err);
    if (rk == NULL) {
        die("rd_kafka_new", err);
    }
    return rk;
}

/* Creates topic (1 partition) unless it exists, and waits until the metadata shows it. */
static void topic_ensure(rd_kafka_t *rk, const char *topic)
{
    char err[512];
    rd_kafka_NewTopic_t *nt = rd_kafka_NewTopic_new(topic, 1, 1, err, sizeof err);
    if (nt == NULL) {
        die("NewTopic", err);
    }
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    rd_kafka_CreateTopics(rk, &nt, 1, NULL, q);
    rd_kafka_event_t *ev = rd_kafka_queue_poll(q, WAIT_MS);
    if (ev == NULL) {
        die("CreateTopics", "no answer");
    }
    size_t n = 0;
    const rd_kafka_topic_result_t **res =
        rd_kafka_CreateTopics_result_topics(rd_kafka_event_CreateTopics_result(ev), &n);
    if (n == 1 && rd_kafka_topic_result_error(res[0]) != RD_KAFKA_RESP_ERR_NO_ERROR &&
        rd_kafka_topic_result_error(res[0]) != RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS) {
        die("CreateTopics", rd_kafka_topic_result_error_string(res[0]));
    }
    rd_kafka_event_destroy(ev);
    rd_kafka_queue_destroy(q);
    rd_kafka_NewTopic_destroy(nt);
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
    for (int i = 0; i < WAIT_MS / 100; i++) {
        const struct rd_kafka_metadata *md;
        if (rd_kafka_metadata(rk, 0, rkt, &md, 5000) == RD_KAFKA_RESP_ERR_NO_ERROR) {
            int ok = md->topic_cnt == 1 && md->topics[0].err == 0 &&
                     md->topics[0].partition_cnt == 1 && md->topics[0].partitions[0].leader >= 0;
            rd_kafka_metadata_destroy(md);
            if (ok) {
                rd_kafka_topic_destroy(rkt);
                return;
            }
        }
        nanosleep(&(struct timespec){0, 100 * 1000 * 1000}, NULL); /* poll interval */
    }
    die(topic, "not in the metadata");
}

static void flush_all(rd_kafka_t *rk, int want)
{
    if (rd_kafka_flush(rk, WAIT_MS) != RD_KAFKA_RESP_ERR_NO_ERROR || delivered != want) {
        fprintf(stderr, "rk_client: %d of %d delivered, %d failed\n", delivered, want, failed);
        exit(1);
    }
}

/* The partition produce_one asks for: RD_KAFKA_PARTITION_UA, or one that does not exist. */
static int32_t partition = RD_KAFKA_PARTITION_UA;

static rd_kafka_resp_err_t produce_one(rd_kafka_t *rk, rd_kafka_topic_t *rkt, const char *topic,
                                       const char *api, int i)
{
    char value[32];
    int len = snprintf(value, sizeof value, "m%d", i);
    if (strcmp(api, "producev") == 0) {
        return rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_VALUE(value, len),
                                 RD_KAFKA_V_PARTITION(partition),
                                 RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
    }
    if (strcmp(api, "header") == 0) {
        return rd_kafka_producev(rk, RD_KAFKA_V_RKT(rkt), RD_KAFKA_V_VALUE(value, len),
                                 RD_KAFKA_V_PARTITION(partition),
                                 RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                                 RD_KAFKA_V_HEADER("app", "1", 1), RD_KAFKA_V_END);
    }
    if (strcmp(api, "headers") == 0) {
        rd_kafka_headers_t *h = rd_kafka_headers_new(2);
        rd_kafka_header_add(h, "app", -1, "1", 1);
        rd_kafka_resp_err_t e = rd_kafka_producev(
            rk, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_VALUE(value, len),
            RD_KAFKA_V_PARTITION(partition), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
            RD_KAFKA_V_HEADERS(h), RD_KAFKA_V_END);
        if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
            rd_kafka_headers_destroy(h); /* still ours on failure */
        }
        return e;
    }
    if (strcmp(api, "produceva") == 0) {
        rd_kafka_vu_t vu[4];
        memset(vu, 0, sizeof vu);
        vu[3].vtype = RD_KAFKA_VTYPE_PARTITION, vu[3].u.i32 = partition;
        vu[0].vtype = RD_KAFKA_VTYPE_TOPIC, vu[0].u.cstr = topic;
        vu[1].vtype = RD_KAFKA_VTYPE_VALUE, vu[1].u.mem.ptr = value, vu[1].u.mem.size = len;
        vu[2].vtype = RD_KAFKA_VTYPE_MSGFLAGS, vu[2].u.i = RD_KAFKA_MSG_F_COPY;
        rd_kafka_error_t *e = rd_kafka_produceva(rk, vu, 4);
        rd_kafka_resp_err_t code = e != NULL ? rd_kafka_error_code(e) : 0;
        if (e != NULL) {
            rd_kafka_error_destroy(e);
        }
        return code;
    }
    if (strcmp(api, "produce") == 0) {
        /* F_FREE: librdkafka frees the payload once delivered (on success only). */
        char *copy = strdup(value);
        if (rd_kafka_produce(rkt, partition == RD_KAFKA_PARTITION_UA ? 0 : partition,
                             RD_KAFKA_MSG_F_FREE, copy, (size_t)len, "k", 1, NULL) != 0) {
            free(copy);
            return rd_kafka_last_error();
        }
        return RD_KAFKA_RESP_ERR_NO_ERROR;
    }
    die("unknown produce api", api);
    return RD_KAFKA_RESP_ERR__FAIL;
}

typedef struct mt_arg {
    rd_kafka_t *rk;
    const char *topic;
    int count;
    rd_kafka_resp_err_t err;
} mt_arg_t;

static void *mt_thread(void *p)
{
    mt_arg_t *a = p;
    for (int i = 0; i < a->count && a->err == RD_KAFKA_RESP_ERR_NO_ERROR; i++) {
        a->err = produce_one(a->rk, NULL, a->topic, "producev", i);
    }
    return NULL;
}

/* THREADS threads produce COUNT messages each with rd_kafka_producev on one client at once. */
static int do_mt(const char *topic, int threads, int count)
{
    rd_kafka_t *rk = client(RD_KAFKA_PRODUCER, NULL);
    topic_ensure(rk, topic);
    pthread_t t[16];
    mt_arg_t a[16];
    for (int i = 0; i < threads && i < 16; i++) {
        a[i] = (mt_arg_t){rk, topic, count, RD_KAFKA_RESP_ERR_NO_ERROR};
        if (pthread_create(&t[i], NULL, mt_thread, &a[i]) != 0) {
            die("pthread_create", topic);
        }
    }
    for (int i = 0; i < threads && i < 16; i++) {
        pthread_join(t[i], NULL);
        if (a[i].err != RD_KAFKA_RESP_ERR_NO_ERROR) {
            die("produce", rd_kafka_err2str(a[i].err));
        }
    }
    flush_all(rk, threads * count);
    rd_kafka_destroy(rk);
    return 0;
}

static int do_produce(const char *topic, const char *api, int count)
{
    rd_kafka_t *rk = client(RD_KAFKA_PRODUCER, NULL);
    topic_ensure(rk, topic);
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
    if (strcmp(api, "batch") == 0) {
        rd_kafka_message_t msgs[16];
        char values[16][16];
        memset(msgs, 0, sizeof msgs);
        for (int i = 0; i < count && i < 16; i++) {
            msgs[i].payload = values[i];
            msgs[i].len = (size_t)snprintf(values[i], sizeof values[i], "m%d", i);
        }
        int n = rd_kafka_produce_batch(rkt, 0, RD_KAFKA_MSG_F_COPY, msgs, count);
        if (n != count) {
            die("produce_batch", "not every message enqueued");
        }
    } else {
        for (int i = 0; i < count; i++) {
            rd_kafka_resp_err_t e = produce_one(rk, rkt, topic, api, i);
            if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
                die("produce", rd_kafka_err2str(e));
            }
        }
    }
    flush_all(rk, count);
    rd_kafka_topic_destroy(rkt);
    rd_kafka_destroy(rk);
    return 0;
}

static int received;
static const char *reply_topic;
static rd_kafka_t *reply_rk;

static void message_print(const rd_kafka_message_t *m)
{
    rd_kafka_headers_t *h = NULL;
    int n = received++;
    printf("msg %d\n", n);
    if (rd_kafka_message_headers(m, &h) != RD_KAFKA_RESP_ERR_NO_ERROR) {
        return;
    }
    const char *name;
    const void *val;
    size_t size;
    for (size_t i = 0; rd_kafka_header_get_all(h, i, &name, &val, &size) == 0; i++) {
        printf("hdr %d %s=", n, name);
        for (size_t k = 0; k < size && k < 200; k++) {
            char c = ((const char *)val)[k];
            putchar(c >= 32 && c < 127 ? c : '?');
        }
        putchar('\n');
    }
}

static void consume_cb(rd_kafka_message_t *m, void *opaque)
{
    (void)opaque;
    if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
        return;
    }
    message_print(m);
    if (reply_topic != NULL) {
        rd_kafka_resp_err_t e =
            rd_kafka_producev(reply_rk, RD_KAFKA_V_TOPIC(reply_topic), RD_KAFKA_V_VALUE("reply", 5),
                              RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
        if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
            die("reply", rd_kafka_err2str(e));
        }
    }
}

static int do_consume(const char *topic, const char *api, int count, const char *group)
{
    bool poll = strcmp(api, "poll") == 0;
    rd_kafka_t *rk = client(RD_KAFKA_CONSUMER, group);
    if (reply_topic != NULL) {
        reply_rk = client(RD_KAFKA_PRODUCER, NULL);
        topic_ensure(reply_rk, reply_topic);
    }
    rd_kafka_topic_t *rkt = NULL;
    if (poll) {
        rd_kafka_poll_set_consumer(rk);
        rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
        rd_kafka_topic_partition_list_add(l, topic, RD_KAFKA_PARTITION_UA);
        if (rd_kafka_subscribe(rk, l) != RD_KAFKA_RESP_ERR_NO_ERROR) {
            die("subscribe", topic);
        }
        rd_kafka_topic_partition_list_destroy(l);
    } else {
        rkt = rd_kafka_topic_new(rk, topic, NULL);
        if (rd_kafka_consume_start(rkt, 0, RD_KAFKA_OFFSET_BEGINNING) != 0) {
            die("consume_start", rd_kafka_err2str(rd_kafka_last_error()));
        }
    }
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (received < count) {
        clock_gettime(CLOCK_MONOTONIC, &t);
        if ((t.tv_sec - t0.tv_sec) * 1000 > WAIT_MS) {
            fprintf(stderr, "rk_client: %d of %d messages in %d ms\n", received, count, WAIT_MS);
            return 1;
        }
        rd_kafka_message_t *m = NULL;
        if (poll) {
            m = rd_kafka_consumer_poll(rk, 500);
        } else if (strcmp(api, "consume") == 0) {
            m = rd_kafka_consume(rkt, 0, 500);
        } else if (strcmp(api, "batch") == 0) {
            rd_kafka_message_t *ms[8];
            ssize_t n = rd_kafka_consume_batch(rkt, 0, 500, ms, 8);
            for (ssize_t i = 0; i < n; i++) {
                if (ms[i]->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
                    message_print(ms[i]);
                }
                rd_kafka_message_destroy(ms[i]);
            }
        } else if (strcmp(api, "callback") == 0) {
            (void)rd_kafka_consume_callback(rkt, 0, 500, consume_cb, NULL);
        } else {
            die("unknown consume api", api);
        }
        if (m != NULL) {
            if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
                message_print(m);
            }
            rd_kafka_message_destroy(m);
        }
    }
    fflush(stdout);
    if (poll) {
        rd_kafka_consumer_close(rk);
    } else {
        rd_kafka_consume_stop(rkt, 0);
        rd_kafka_topic_destroy(rkt);
    }
    rd_kafka_destroy(rk);
    if (reply_rk != NULL) {
        flush_all(reply_rk, count);
        rd_kafka_destroy(reply_rk);
    }
    return 0;
}

static int do_missing(const char *topic)
{
    rd_kafka_t *rk = client(RD_KAFKA_PRODUCER, NULL);
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
    /* librdkafka believes a "no such topic" only topic.metadata.propagation.max.ms (10 ms here)
       after it first saw the topic: ask for the topic's metadata once that has passed (the
       broker does not create topics); a produce then fails in the call. */
    nanosleep(&(struct timespec){0, 100 * 1000 * 1000}, NULL);
    const struct rd_kafka_metadata *md;
    if (rd_kafka_metadata(rk, 0, rkt, &md, WAIT_MS) == RD_KAFKA_RESP_ERR_NO_ERROR) {
        rd_kafka_metadata_destroy(md);
    }
    rd_kafka_resp_err_t e =
        rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_VALUE("x", 1),
                          RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
    printf("produce: %s\n", rd_kafka_err2name(e));
    rd_kafka_topic_destroy(rkt);
    rd_kafka_destroy(rk);
    return e != RD_KAFKA_RESP_ERR_NO_ERROR ? 0 : 1;
}

/* Every API asks for partition 7 of the 1-partition topic: each call must fail at once with
   RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION (and, for rd_kafka_produce, errno ESRCH), the caller's
   headers still the caller's. */
static int do_badpart(const char *topic)
{
    rd_kafka_t *rk = client(RD_KAFKA_PRODUCER, NULL);
    topic_ensure(rk, topic);
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
    partition = 7;
    const char *apis[] = {"producev", "produceva", "header", "headers", "produce"};
    for (int i = 0; i < 5; i++) {
        errno = 0;
        rd_kafka_resp_err_t e = produce_one(rk, rkt, topic, apis[i], i);
        printf("%s: %s%s\n", apis[i], rd_kafka_err2name(e),
               strcmp(apis[i], "produce") == 0 && errno == ESRCH ? " ESRCH" : "");
        if (e != RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION) {
            return 1;
        }
    }
    /* Then the header-carrying APIs on their success path. */
    partition = RD_KAFKA_PARTITION_UA;
    for (int i = 0; i < 2; i++) {
        rd_kafka_resp_err_t e = produce_one(rk, rkt, topic, i == 0 ? "headers" : "header", i);
        if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
            die("produce", rd_kafka_err2str(e));
        }
    }
    flush_all(rk, 2);
    rd_kafka_topic_destroy(rkt);
    rd_kafka_destroy(rk);
    return 0;
}

/* Writes every record of every partition of TOPIC (from the beginning to the end) into FILE as
   varint length + value: the segment file format, when TOPIC holds SegmentObjects. */
static int do_dump(const char *topic, const char *file)
{
    char err[512];
    rd_kafka_conf_t *c = rd_kafka_conf_new();
    if (rd_kafka_conf_set(c, "bootstrap.servers", bootstrap, err, sizeof err) != 0 ||
        rd_kafka_conf_set(c, "enable.partition.eof", "true", err, sizeof err) != 0) {
        die("conf", err);
    }
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, c, err, sizeof err);
    if (rk == NULL) {
        die("rd_kafka_new", err);
    }
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
    const struct rd_kafka_metadata *md;
    if (rd_kafka_metadata(rk, 0, rkt, &md, WAIT_MS) != RD_KAFKA_RESP_ERR_NO_ERROR ||
        md->topic_cnt != 1 || md->topics[0].err != 0) {
        die("metadata", topic);
    }
    int parts = md->topics[0].partition_cnt;
    rd_kafka_metadata_destroy(md);
    FILE *out = fopen(file, "wb");
    if (out == NULL) {
        die("fopen", file);
    }
    for (int p = 0; p < parts; p++) {
        if (rd_kafka_consume_start(rkt, p, RD_KAFKA_OFFSET_BEGINNING) != 0) {
            die("consume_start", topic);
        }
        for (;;) {
            rd_kafka_message_t *m = rd_kafka_consume(rkt, p, WAIT_MS);
            if (m == NULL) {
                die("consume", "no end of partition in time");
            }
            rd_kafka_resp_err_t e = m->err;
            if (e == RD_KAFKA_RESP_ERR_NO_ERROR) {
                unsigned char v[10];
                size_t n = 0, len = m->len;
                do {
                    v[n++] = (unsigned char)((len & 0x7f) | (len > 0x7f ? 0x80 : 0));
                    len >>= 7;
                } while (len != 0);
                fwrite(v, 1, n, out);
                fwrite(m->payload, 1, m->len, out);
            }
            rd_kafka_message_destroy(m);
            if (e == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
                break;
            }
            if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
                die("consume", rd_kafka_err2str(e));
            }
        }
        rd_kafka_consume_stop(rkt, p);
    }
    fclose(out);
    rd_kafka_topic_destroy(rkt);
    rd_kafka_destroy(rk);
    return 0;
}

static int do_raw(const char *topic, int n, char **values)
{
    rd_kafka_t *rk = client(RD_KAFKA_PRODUCER, NULL);
    topic_ensure(rk, topic);
    static char longv[5000];
    memset(longv, 'a', sizeof longv);
    for (int i = 0; i < n; i++) {
        const char *v = values[i];
        ssize_t len = (ssize_t)strlen(v);
        if (strcmp(v, "NUL") == 0) {
            v = "1-AAAA\0-BBBB", len = 12;
        } else if (strcmp(v, "LONG") == 0) {
            v = longv, len = (ssize_t)sizeof longv;
        }
        rd_kafka_resp_err_t e =
            strcmp(values[i], "-") == 0
                ? rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_VALUE("x", 1),
                                    RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END)
                : rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_VALUE("x", 1),
                                    RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                                    RD_KAFKA_V_HEADER("sw8", v, len), RD_KAFKA_V_END);
        if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
            die("produce", rd_kafka_err2str(e));
        }
    }
    flush_all(rk, n);
    rd_kafka_destroy(rk);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        die("usage", "rk_client BOOTSTRAP TOPIC produce|consume|missing|raw ...");
    }
    bootstrap = argv[1];
    const char *topic = argv[2], *mode = argv[3];
    if (strcmp(mode, "produce") == 0 && argc == 6) {
        return do_produce(topic, argv[4], atoi(argv[5]));
    }
    if (strcmp(mode, "consume") == 0 && (argc == 7 || argc == 8)) {
        reply_topic = argc == 8 ? argv[7] : NULL;
        return do_consume(topic, argv[4], atoi(argv[5]), argv[6]);
    }
    if (strcmp(mode, "missing") == 0) {
        return do_missing(topic);
    }
    if (strcmp(mode, "mt") == 0 && argc == 6) {
        return do_mt(topic, atoi(argv[4]), atoi(argv[5]));
    }
    if (strcmp(mode, "create") == 0) {
        rd_kafka_t *rk = client(RD_KAFKA_PRODUCER, NULL);
        topic_ensure(rk, topic);
        rd_kafka_destroy(rk);
        return 0;
    }
    if (strcmp(mode, "dump") == 0 && argc == 5) {
        return do_dump(topic, argv[4]);
    }
    if (strcmp(mode, "badpart") == 0) {
        return do_badpart(topic);
    }
    if (strcmp(mode, "raw") == 0 && argc > 4) {
        return do_raw(topic, argc - 4, argv + 4);
    }
    die("usage", mode);
    return 1;
}
