/*
 * test_producer_close.c - shutdown promptness: a thread blocked inside kp_send (waiting for
 * metadata with the broker unreachable, or for buffer memory) returns KP_ECLOSED as soon as
 * kp_close begins, and kp_close returns long before max.block.ms (60 s here), after the
 * blocked caller has left kp_send. Label kafka (the buffer case uses the fixture's broker).
 *
 * "Blocked" is observed, not assumed: the test waits (bounded) until the sending thread is
 * asleep in the kernel (/proc/self/task/<tid>/stat state S) or counted as a pool waiter.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "kafka_test_env.h"
#include "kproducer.h"
#include "producer_test_util.h"
#include "test_util.h"
#include "test_wait.h"

/* Generous bound for kp_close with a blocked sender: far below max.block.ms (60 s). */
#define CLOSE_BOUND_S 10.0

struct sender_arg {
    kp_producer_t *p;
    const char *topic;
    int32_t partition;
    atomic_int tid; /* 0 until the thread runs */
    atomic_int rc;
    atomic_int done;
    double returned_at;
};

static void ignore_cb(void *opaque, int error, int32_t partition, int64_t offset)
{
    (void)opaque;
    (void)error;
    (void)partition;
    (void)offset;
}

static void *blocked_sender(void *arg)
{
    struct sender_arg *a = arg;
    atomic_store(&a->tid, (int)syscall(SYS_gettid));
    int rc = kp_send(a->p, a->topic, a->partition, NULL, 0, "v", 1, NULL, 0, 0, ignore_cb, NULL);
    a->returned_at = now_s();
    atomic_store(&a->rc, rc);
    atomic_store(&a->done, 1);
    return NULL;
}

/* Whether thread tid of this process is sleeping (state S) in the kernel. */
static bool thread_sleeping(int tid)
{
    char path[64], buf[512];
    snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
    FILE *f = fopen(path, "r");
    if (!f) {
        return false;
    }
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *paren = strrchr(buf, ')'); /* state follows "(comm) " */
    return paren && paren[1] == ' ' && paren[2] == 'S';
}

static bool sender_asleep(void *arg)
{
    struct sender_arg *a = arg;
    int tid = atomic_load(&a->tid);
    return atomic_load(&a->done) || (tid != 0 && thread_sleeping(tid));
}

static bool sender_done(void *arg)
{
    struct sender_arg *a = arg;
    return atomic_load(&a->done) != 0;
}

static bool pool_waiter(void *arg)
{
    struct sender_arg *a = arg;
    kp_stats_t st;
    kp_stats(a->p, &st);
    return atomic_load(&a->done) || st.pool_waiters == 1;
}

/* Closes a->p while the thread is blocked in kp_send and checks both come back promptly. */
static void close_and_check(struct sender_arg *a, pthread_t th)
{
    cr_assert_eq(atomic_load(&a->done), 0, "kp_send returned before kp_close: %s",
                 kp_err_name(atomic_load(&a->rc)));
    double t0 = now_s();
    int rc = kp_close(a->p, 0);
    double took = now_s() - t0;
    cr_assert(rc == 0 || rc == KP_ETIMED_OUT, "kp_close: %s", kp_err_name(rc));
    cr_assert_lt(took, CLOSE_BOUND_S, "kp_close took %.1f s with a blocked kp_send", took);
    /* kp_close waited for the caller to leave kp_send, so the thread is past the call and
       about to record its result (not necessarily done yet: a bounded wait, not an assert). */
    wait_until(sender_done, a, "the blocked kp_send to return after kp_close");
    cr_assert_eq(atomic_load(&a->rc), KP_ECLOSED, "blocked kp_send returned %s",
                 kp_err_name(atomic_load(&a->rc)));
    cr_assert_leq(a->returned_at, now_s());
    pthread_join(th, NULL);
}

Test(producer_close, send_blocked_on_metadata_returns_closed, .timeout = 60)
{
    char bootstrap[64];
    int port = loopback_refused_port(false);
    cr_assert_gt(port, 0, "no free loopback port: %s", strerror(errno));
    snprintf(bootstrap, sizeof(bootstrap), "127.0.0.1:%d", port);
    const char *kv[] = {"max.block.ms", "60000", NULL};
    struct sender_arg a = {.topic = "sw-test-6p", .partition = -1};
    a.p = producer_test_new(bootstrap, kv);
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, blocked_sender, &a), 0);
    wait_until(sender_asleep, &a, "kp_send blocks waiting for metadata");
    close_and_check(&a, th);
}

Test(producer_close, send_blocked_on_buffer_memory_returns_closed, .timeout = 60)
{
    sw_test_kafka_t k;
    cr_assert_eq(sw_test_kafka_fixture(&k), 0);
    /* 4 blocks of 16 KiB held by lingering batches: a 5th partition waits for memory. */
    const char *kv[] = {"buffer.memory",       "65536",  "linger.ms", "100000",
                        "delivery.timeout.ms", "200000", NULL};
    struct sender_arg a = {.topic = "sw-test-6p", .partition = 4};
    a.p = producer_test_new(k.bootstrap, kv);
    for (int part = 0; part < 4; part++) {
        cr_assert_eq(kp_send(a.p, a.topic, part, NULL, 0, "v", 1, NULL, 0, 0, ignore_cb, NULL), 0);
    }
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, blocked_sender, &a), 0);
    wait_until(pool_waiter, &a, "kp_send waits in the BufferPool");
    close_and_check(&a, th);
}

Test(producer_close, many_blocked_senders_all_return_closed, .timeout = 60)
{
    /* Many threads hammer kp_send on an unreachable broker while kp_close runs: each call
     * returns (KP_ECLOSED) and kp_close frees nothing while one is inside (ASan/TSan). */
    char bootstrap[64];
    int port = loopback_refused_port(false);
    cr_assert_gt(port, 0, "no free loopback port: %s", strerror(errno));
    snprintf(bootstrap, sizeof(bootstrap), "127.0.0.1:%d", port);
    const char *kv[] = {"max.block.ms", "60000", NULL};
    kp_producer_t *p = producer_test_new(bootstrap, kv);
    struct sender_arg a[4];
    pthread_t th[4];
    for (int i = 0; i < 4; i++) {
        a[i] = (struct sender_arg){.p = p, .topic = "sw-test-6p", .partition = -1};
        cr_assert_eq(pthread_create(&th[i], NULL, blocked_sender, &a[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        wait_until(sender_asleep, &a[i], "every kp_send blocks waiting for metadata");
    }
    double t0 = now_s();
    kp_close(p, 0);
    cr_assert_lt(now_s() - t0, CLOSE_BOUND_S, "kp_close took %.1f s", now_s() - t0);
    for (int i = 0; i < 4; i++) {
        wait_until(sender_done, &a[i], "every blocked kp_send to return after kp_close");
        cr_assert_eq(atomic_load(&a[i].rc), KP_ECLOSED, "thread %d: %s", i,
                     kp_err_name(atomic_load(&a[i].rc)));
        pthread_join(th[i], NULL);
    }
}
