/*
 * datacarrier_bench.c - DataCarrier throughput against a bounded queue built on one pthread
 * mutex and two condition variables with the same capacity, measured in the same run.
 *
 *   datacarrier_bench [--smoke] [--seconds S] [--rounds R]
 *
 * Scenarios: 1P1C, 2P1C, 4P2C (producers x consumer threads), each for IF_POSSIBLE, BLOCKING
 * and the mutex queue. Producers store as fast as they can for S seconds (1 by default, 0.1
 * with --smoke); throughput is items CONSUMED per second over the time from start until
 * shutdown has drained everything, so IF_POSSIBLE gets no credit for dropped items (drops are
 * reported separately). Each shape runs R rounds (3 by default, 1 with --smoke) with the three
 * kinds interleaved (ifp, blk, mutex, ifp, ...), so a burst of load from elsewhere hits all
 * kinds alike; every figure is the median over the rounds. produce_ns is the cost of one dc_produce
 * on an uncontended carrier with room (one producer, no consumer running), averaged over many
 * rounds.
 *
 * produce_2p_ns is the thread CPU per dc_produce with two producers storing at once (each into
 * its own ring, as the agent's producer-thread partitioning does), no consumer running.
 * drop_pct_half_load: one producer offers half the measured 1P1C carrier throughput (the better
 * of IF_POSSIBLE and BLOCKING, medians), paced evenly on the clock (it reads the clock between
 * stores and never stores more than BUFFER / 16 items at once), for S seconds; the percent of
 * offered items dropped (target 0: an agent's load is far below the carrier's capacity, and at such
 * a load nothing may be lost). Beside it, what the machine does to two busy threads: how often per
 * second one did not run for longer than the producer's ring takes to fill at that rate
 * (ring_fill_us; stalls_over_ring_fill_per_s) and the longest such gap (longest_stall_us). A
 * consumer that is off the CPU that long drops whatever its idle policy: a scratch build whose
 * consumer never sleeps still dropped items at a VM whose busy threads lost the CPU for longer
 * than ring_fill_us hundreds of times a second, so read drop_pct_half_load beside
 * stalls_over_ring_fill_per_s.
 *
 * Last line: name=value pairs (ratio_* = IF_POSSIBLE / mutex, blocking_ratio_* = BLOCKING /
 * mutex, for information: with three spinning threads on two vCPUs they measure the scheduler
 * more than the queue; raw items/s, drops, produce_ns, produce_2p_ns, drop_pct_half_load,
 * half_load_offered, ring_fill_us, stalls_over_ring_fill_per_s, longest_stall_us, cpus_used).
 *
 * Reading the figures: cpus_used is the average CPU time this process got per wall second.
 * Producers in IF_POSSIBLE never block, so when the machine is busy with other work (cpus_used
 * well below the core count) they spend their slices dropping while the consumer waits for a
 * slice of its own; the mutex queue's producers sleep instead and hand the CPU to its consumer.
 * IF_POSSIBLE ratios are only meaningful with the machine otherwise idle.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "datacarrier.h"
#include "test_util.h"

enum { CHANNELS = 4, BUFFER = 1024, CAPACITY = CHANNELS * BUFFER, MAX_THREADS = 8, MAX_ROUNDS = 9 };

static double clock_s(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- Baseline: bounded queue under one mutex, consumers take everything available. ---- */

typedef struct mutex_queue {
    pthread_mutex_t mu;
    pthread_cond_t not_full;
    pthread_cond_t not_empty;
    void *items[CAPACITY]; /* all fields below protected by mu */
    size_t head, count;
    int waiting_producers, waiting_consumers;
    bool closed;
} mutex_queue_t;

static void mq_init(mutex_queue_t *q)
{
    memset(q, 0, sizeof *q);
    pthread_mutex_init(&q->mu, NULL);
    pthread_cond_init(&q->not_full, NULL);
    pthread_cond_init(&q->not_empty, NULL);
}

static void mq_fini(mutex_queue_t *q)
{
    pthread_mutex_destroy(&q->mu);
    pthread_cond_destroy(&q->not_full);
    pthread_cond_destroy(&q->not_empty);
}

static bool mq_push(mutex_queue_t *q, void *item)
{
    pthread_mutex_lock(&q->mu);
    while (q->count == CAPACITY && !q->closed) {
        q->waiting_producers++;
        pthread_cond_wait(&q->not_full, &q->mu);
        q->waiting_producers--;
    }
    bool ok = !q->closed;
    if (ok) {
        q->items[(q->head + q->count) % CAPACITY] = item;
        q->count++;
        if (q->waiting_consumers) {
            pthread_cond_signal(&q->not_empty);
        }
    }
    pthread_mutex_unlock(&q->mu);
    return ok;
}

/* Takes every item available (waits while empty); 0 once closed and empty. */
static size_t mq_pop_all(mutex_queue_t *q, void **out)
{
    pthread_mutex_lock(&q->mu);
    while (q->count == 0 && !q->closed) {
        q->waiting_consumers++;
        pthread_cond_wait(&q->not_empty, &q->mu);
        q->waiting_consumers--;
    }
    size_t n = q->count;
    for (size_t i = 0; i < n; i++) {
        out[i] = q->items[(q->head + i) % CAPACITY];
    }
    q->head = (q->head + n) % CAPACITY;
    q->count = 0;
    if (n && q->waiting_producers) {
        pthread_cond_broadcast(&q->not_full);
    }
    pthread_mutex_unlock(&q->mu);
    return n;
}

static void mq_close(mutex_queue_t *q)
{
    pthread_mutex_lock(&q->mu);
    q->closed = true;
    pthread_cond_broadcast(&q->not_full);
    pthread_cond_broadcast(&q->not_empty);
    pthread_mutex_unlock(&q->mu);
}

/* ---- One scenario. ---- */

typedef enum kind { KIND_IF_POSSIBLE, KIND_BLOCKING, KIND_MUTEX } kind_t;

typedef struct scenario {
    kind_t kind;
    dc_carrier_t *carrier;
    mutex_queue_t *queue;
    _Atomic int stop;          /* set by main after the run time; relaxed polling */
    _Atomic uint64_t consumed; /* sum over consumer threads (relaxed, read after join) */
    _Atomic uint64_t sink;     /* keeps the consumer's read of items alive */
} scenario_t;

typedef struct result {
    double items_per_s;
    double cpus; /* CPU time of this process / wall time: how much of the machine we got */
    uint64_t consumed, dropped;
} result_t;

static void consume_batch(void *ctx, void **items, size_t n)
{
    scenario_t *s = ctx;
    uintptr_t sum = 0;
    for (size_t i = 0; i < n; i++) {
        sum += (uintptr_t)items[i];
    }
    atomic_fetch_add_explicit(&s->sink, sum, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->consumed, n, memory_order_relaxed);
}

static void *producer_main(void *arg)
{
    scenario_t *s = arg;
    uintptr_t i = 1;
    while (!atomic_load_explicit(&s->stop, memory_order_relaxed)) {
        for (int k = 0; k < 256; k++, i++) {
            if (s->kind == KIND_MUTEX) {
                mq_push(s->queue, (void *)i);
            } else {
                dc_produce(s->carrier, (void *)i);
            }
        }
    }
    return NULL;
}

static void *mq_consumer_main(void *arg)
{
    scenario_t *s = arg;
    void **batch = malloc(CAPACITY * sizeof(void *));
    size_t n;
    while ((n = mq_pop_all(s->queue, batch)) != 0) {
        consume_batch(s, batch, n);
    }
    free(batch);
    return NULL;
}

static int double_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of each field over n rounds (n <= MAX_ROUNDS). */
static result_t result_median(const result_t *r, int n)
{
    double ips[MAX_ROUNDS], cpus[MAX_ROUNDS], drops[MAX_ROUNDS];
    for (int i = 0; i < n; i++) {
        ips[i] = r[i].items_per_s;
        cpus[i] = r[i].cpus;
        drops[i] = (double)r[i].dropped;
    }
    qsort(ips, (size_t)n, sizeof(double), double_cmp);
    qsort(cpus, (size_t)n, sizeof(double), double_cmp);
    qsort(drops, (size_t)n, sizeof(double), double_cmp);
    result_t m = {
        .items_per_s = ips[n / 2], .cpus = cpus[n / 2], .dropped = (uint64_t)drops[n / 2]};
    return m;
}

static result_t scenario_run(kind_t kind, int producers, int consumers, double seconds)
{
    scenario_t s = {.kind = kind};
    mutex_queue_t *queue = NULL;
    pthread_t prod[MAX_THREADS], cons[MAX_THREADS];
    char err[256];
    if (kind == KIND_MUTEX) {
        queue = malloc(sizeof *queue);
        mq_init(queue);
        s.queue = queue;
    } else {
        dc_strategy_t st = kind == KIND_BLOCKING ? DC_STRATEGY_BLOCKING : DC_STRATEGY_IF_POSSIBLE;
        if (dc_carrier_create("bench", CHANNELS, BUFFER, st, dc_partitioner_thread(CHANNELS),
                              &s.carrier, err, sizeof err) != DC_OK) {
            fprintf(stderr, "dc_carrier_create: %s\n", err);
            exit(1);
        }
    }
    double t0 = now_s();
    double cpu0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
    if (kind == KIND_MUTEX) {
        for (int i = 0; i < consumers; i++) {
            pthread_create(&cons[i], NULL, mq_consumer_main, &s);
        }
    } else if (dc_consume(s.carrier, consume_batch, NULL, &s, (uint32_t)consumers, 20) != 0) {
        fprintf(stderr, "dc_consume failed\n");
        exit(1);
    }
    for (int i = 0; i < producers; i++) {
        pthread_create(&prod[i], NULL, producer_main, &s);
    }
    struct timespec run = {.tv_sec = (time_t)seconds,
                           .tv_nsec = (long)((seconds - (double)(time_t)seconds) * 1e9)};
    while (nanosleep(&run, &run) != 0 && errno == EINTR) {
    }
    atomic_store_explicit(&s.stop, 1, memory_order_relaxed);
    for (int i = 0; i < producers; i++) {
        pthread_join(prod[i], NULL);
    }
    result_t r = {0};
    if (kind == KIND_MUTEX) {
        mq_close(queue);
        for (int i = 0; i < consumers; i++) {
            pthread_join(cons[i], NULL);
        }
    } else {
        dc_carrier_shutdown(s.carrier);
        dc_stats_t st;
        dc_carrier_stats(s.carrier, &st);
        r.dropped = st.dropped;
        dc_carrier_destroy(s.carrier);
    }
    double elapsed = now_s() - t0;
    r.cpus = (clock_s(CLOCK_PROCESS_CPUTIME_ID) - cpu0) / elapsed;
    r.consumed = atomic_load(&s.consumed);
    r.items_per_s = (double)r.consumed / elapsed;
    if (queue) {
        mq_fini(queue);
        free(queue);
    }
    return r;
}

/* ns per dc_produce: one thread, a carrier with room for every item, no consumer. */
static double produce_cost_ns(int rounds)
{
    enum { N = 1 << 16 };
    double total = 0;
    for (int r = 0; r < rounds; r++) {
        char err[256];
        dc_carrier_t *c = NULL;
        if (dc_carrier_create("cost", 1, N, DC_STRATEGY_IF_POSSIBLE, dc_partitioner_thread(1), &c,
                              err, sizeof err) != DC_OK) {
            fprintf(stderr, "dc_carrier_create: %s\n", err);
            exit(1);
        }
        double t0 = now_s();
        for (uintptr_t i = 1; i <= N; i++) {
            dc_produce(c, (void *)i);
        }
        total += now_s() - t0;
        dc_carrier_destroy(c);
    }
    return total * 1e9 / ((double)rounds * N);
}

typedef struct produce2 {
    dc_carrier_t *carrier;
    pthread_barrier_t *start;
    double cpu_ns; /* this thread's CPU time for its N calls */
} produce2_t;

enum { PRODUCE2_N = 1 << 15 };

static void *produce2_main(void *arg)
{
    produce2_t *p = arg;
    pthread_barrier_wait(p->start);
    double t0 = clock_s(CLOCK_THREAD_CPUTIME_ID);
    for (uintptr_t i = 1; i <= PRODUCE2_N; i++) {
        dc_produce(p->carrier, (void *)i);
    }
    p->cpu_ns = (clock_s(CLOCK_THREAD_CPUTIME_ID) - t0) * 1e9;
    return NULL;
}

/*
 * ns (thread CPU) per dc_produce with 2 producers storing at once into a carrier with room for
 * all their items (the agent's producer-thread partitioning over 2 rings), no consumer: the
 * median over rounds of the two threads' mean.
 */
static double produce_2p_ns(int rounds)
{
    double v[256];
    if (rounds > 256) {
        rounds = 256;
    }
    for (int r = 0; r < rounds; r++) {
        char err[256];
        dc_carrier_t *c = NULL;
        if (dc_carrier_create("cost2", 2, 2 * PRODUCE2_N, DC_STRATEGY_IF_POSSIBLE,
                              dc_partitioner_thread(2), &c, err, sizeof err) != DC_OK) {
            fprintf(stderr, "dc_carrier_create: %s\n", err);
            exit(1);
        }
        pthread_barrier_t start;
        pthread_barrier_init(&start, NULL, 2);
        produce2_t p[2] = {{c, &start, 0}, {c, &start, 0}};
        pthread_t t[2];
        for (int i = 0; i < 2; i++) {
            pthread_create(&t[i], NULL, produce2_main, &p[i]);
        }
        for (int i = 0; i < 2; i++) {
            pthread_join(t[i], NULL);
        }
        pthread_barrier_destroy(&start);
        dc_carrier_destroy(c);
        v[r] = (p[0].cpu_ns + p[1].cpu_ns) / (2.0 * PRODUCE2_N);
    }
    qsort(v, (size_t)rounds, sizeof(double), double_cmp);
    return v[rounds / 2];
}

/*
 * Drop rate (percent of offered items) when one producer offers `rate` items/s to one consumer
 * for `seconds`, paced on the monotonic clock: it stores what is due, then reads the clock again
 * (no sleep: a nanosleep returns only after tens of microseconds). A producer that was
 * descheduled for longer than it takes to offer BUFFER / 16 items does not store the missed
 * items in one burst (an application thread that lost the CPU does not either): the schedule
 * restarts from now, and *offered_rate returns the rate actually offered. Same carrier shape as
 * the throughput scenarios.
 */
static double drop_pct_at(double rate, double seconds, double *offered_rate)
{
    scenario_t s = {.kind = KIND_IF_POSSIBLE};
    char err[256];
    if (dc_carrier_create("paced", CHANNELS, BUFFER, DC_STRATEGY_IF_POSSIBLE,
                          dc_partitioner_thread(CHANNELS), &s.carrier, err, sizeof err) != DC_OK ||
        dc_consume(s.carrier, consume_batch, NULL, &s, 1, 20) != 0) {
        fprintf(stderr, "paced carrier: %s\n", err);
        exit(1);
    }
    double t0 = now_s(), start = t0;
    uint64_t offered = 0, base = 0;
    for (double t = t0; t - start < seconds; t = now_s()) {
        uint64_t due = base + (uint64_t)((t - t0) * rate);
        /* Descheduled (more than a sixteenth of the one ring this thread stores into is due at
           once): restart the schedule rather than store a burst the offered rate does not
           have. */
        if (due > offered + BUFFER / 16) {
            t0 = t;
            base = offered;
            continue;
        }
        /* Ahead: read the clock again. A nanosleep would return only after tens of
           microseconds and turn the even load into bursts of hundreds of items. */
        for (; offered < due; offered++) {
            dc_produce(s.carrier, (void *)(uintptr_t)(offered + 1));
        }
    }
    double elapsed = now_s() - start;
    dc_carrier_shutdown(s.carrier);
    dc_stats_t st;
    dc_carrier_stats(s.carrier, &st);
    dc_carrier_destroy(s.carrier);
    uint64_t consumed = atomic_load(&s.consumed);
    if (consumed + st.dropped != offered) {
        fprintf(stderr,
                "paced run: offered %" PRIu64 " != consumed %" PRIu64 " + dropped %" PRIu64 "\n",
                offered, consumed, st.dropped);
        exit(1);
    }
    *offered_rate = (double)offered / elapsed;
    return offered ? 100.0 * (double)st.dropped / (double)offered : 0;
}

typedef struct stall_probe {
    double seconds;
    double limit_s;   /* a gap longer than this is counted */
    uint64_t over;    /* gaps longer than limit_s */
    double longest_s; /* the longest gap */
} stall_probe_t;

/* Reads the clock back to back for p->seconds; a long gap between two reads is time this
   thread did not run (an interrupt, another task, the hypervisor). */
static void *stall_probe_main(void *arg)
{
    stall_probe_t *p = arg;
    double start = now_s(), prev = start;
    while (prev - start < p->seconds) {
        double t = now_s();
        if (t - prev > p->limit_s) {
            p->over++;
        }
        if (t - prev > p->longest_s) {
            p->longest_s = t - prev;
        }
        prev = t;
    }
    return NULL;
}

/*
 * What the machine alone does to two busy threads (the paced run's producer and consumer):
 * two threads read the clock back to back for `seconds`; *per_s is how many times per second
 * one of them did not run for longer than `limit_s` (the time the producer's ring takes to
 * fill at the offered rate: a consumer off the CPU that long drops, whatever its policy), and
 * *longest_us the longest such gap.
 */
static void machine_stalls(double seconds, double limit_s, double *per_s, double *longest_us)
{
    stall_probe_t p[2] = {{seconds, limit_s, 0, 0}, {seconds, limit_s, 0, 0}};
    pthread_t t[2];
    for (int i = 0; i < 2; i++) {
        pthread_create(&t[i], NULL, stall_probe_main, &p[i]);
    }
    for (int i = 0; i < 2; i++) {
        pthread_join(t[i], NULL);
    }
    *per_s = (double)(p[0].over + p[1].over) / seconds;
    *longest_us = (p[0].longest_s > p[1].longest_s ? p[0].longest_s : p[1].longest_s) * 1e6;
}

int main(int argc, char **argv)
{
    double seconds = 1.0;
    int rounds = 200; /* of the produce cost measurement */
    int runs = 3;     /* interleaved rounds per shape and kind */
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--smoke") == 0) {
            seconds = 0.1;
            rounds = 10;
            runs = 1;
        } else if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc) {
            seconds = atof(argv[++i]);
        } else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc) {
            runs = atoi(argv[++i]);
        } else {
            fprintf(stderr, "usage: %s [--smoke] [--seconds S] [--rounds R]\n", argv[0]);
            return 2;
        }
    }
    if (seconds <= 0 || runs < 1 || runs > MAX_ROUNDS) {
        fprintf(stderr, "%s: --seconds must be > 0 and --rounds within 1..%d\n", argv[0],
                MAX_ROUNDS);
        return 2;
    }
    static const struct {
        const char *name;
        int p, c;
    } shapes[] = {{"1p1c", 1, 1}, {"2p1c", 2, 1}, {"4p2c", 4, 2}};
    static const char *kinds[] = {"if_possible", "blocking", "mutex"};
    result_t res[3][3];
    for (int sh = 0; sh < 3; sh++) {
        result_t all[3][MAX_ROUNDS];
        for (int r = 0; r < runs; r++) {
            for (int k = 0; k < 3; k++) {
                result_t *x = &all[k][r];
                *x = scenario_run((kind_t)k, shapes[sh].p, shapes[sh].c, seconds);
                printf("%-5s %-12s round %d %12.0f items/s consumed, %12" PRIu64
                       " dropped, %.2f CPUs used\n",
                       shapes[sh].name, kinds[k], r, x->items_per_s, x->dropped, x->cpus);
                fflush(stdout);
            }
        }
        for (int k = 0; k < 3; k++) {
            res[sh][k] = result_median(all[k], runs);
        }
    }
    double produce_ns = produce_cost_ns(rounds);
    printf("produce cost (1 producer, no contention): %.1f ns\n", produce_ns);
    double produce2_ns = produce_2p_ns(runs * 7);
    printf("produce cost (2 producers at once, thread CPU): %.1f ns\n", produce2_ns);
    /* Capacity: the better of the two 1P1C carrier figures (BLOCKING never drops, so its
       throughput is what the consumer drains when it is never starved). */
    double capacity = res[0][0].items_per_s > res[0][1].items_per_s ? res[0][0].items_per_s
                                                                    : res[0][1].items_per_s;
    double half_rate = capacity / 2;
    double offered_rate = 0;
    double drop_half = drop_pct_at(half_rate, seconds, &offered_rate);
    printf("drops at half the 1P1C capacity (%.0f items/s planned, %.0f offered, paced): "
           "%.4f%%\n",
           half_rate, offered_rate, drop_half);
    double ring_fill_s = BUFFER / half_rate;
    double stalls_per_s, stall_longest_us;
    machine_stalls(seconds, ring_fill_s, &stalls_per_s, &stall_longest_us);
    printf("machine stalls: two threads that only read the clock did not run for more than "
           "%.1f us (the ring's fill time at that rate) %.0f times/s, longest %.0f us\n",
           ring_fill_s * 1e6, stalls_per_s, stall_longest_us);

    printf("ratio_1p1c=%.2f ratio_2p1c=%.2f ratio_4p2c=%.2f blocking_ratio_1p1c=%.2f "
           "blocking_ratio_2p1c=%.2f blocking_ratio_4p2c=%.2f produce_ns=%.1f",
           res[0][0].items_per_s / res[0][2].items_per_s,
           res[1][0].items_per_s / res[1][2].items_per_s,
           res[2][0].items_per_s / res[2][2].items_per_s,
           res[0][1].items_per_s / res[0][2].items_per_s,
           res[1][1].items_per_s / res[1][2].items_per_s,
           res[2][1].items_per_s / res[2][2].items_per_s, produce_ns);
    printf(" produce_2p_ns=%.1f drop_pct_half_load=%.4f half_load_offered=%.0f"
           " ring_fill_us=%.1f stalls_over_ring_fill_per_s=%.0f longest_stall_us=%.0f",
           produce2_ns, drop_half, offered_rate, ring_fill_s * 1e6, stalls_per_s, stall_longest_us);
    double cpus = 0;
    for (int sh = 0; sh < 3; sh++) {
        for (int k = 0; k < 3; k++) {
            cpus += res[sh][k].cpus / 9;
        }
    }
    printf(" cpus_used=%.2f", cpus);
    for (int sh = 0; sh < 3; sh++) {
        printf(" ifp_%s=%.0f blk_%s=%.0f mutex_%s=%.0f drops_%s=%" PRIu64, shapes[sh].name,
               res[sh][0].items_per_s, shapes[sh].name, res[sh][1].items_per_s, shapes[sh].name,
               res[sh][2].items_per_s, shapes[sh].name, res[sh][0].dropped);
    }
    printf("\n");
    return 0;
}
