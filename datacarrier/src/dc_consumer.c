/*
 * dc_consumer.c - consumer threads: drain owned rings into one batch, hand the batch to
 * consume_fn, sleep when idle, drain everything at shutdown. Also dc_consume.
 */
#include "dc_consumer.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "dc_carrier.h"

/*
 * Idle policy. After a pass that found items, up to SPIN_PASSES further passes follow at once
 * (no PAUSE: in a virtual machine a PAUSE loop can exit to the host; a pass over empty rings is
 * a few loads of lines already in our cache, well under a microsecond for all of them): this
 * catches a producer that stores continuously without any sleep. If they stay empty, the
 * consumer naps (consumer_nap: the consume cycle), during which producers
 * wake it only if a ring gets half full; if the pass after the nap is still empty it goes idle
 * (consumer_idle) and sleeps, without a timeout, until the first store wakes it (the argument at
 * consumer_idle shows no wake-up is lost). A timeout there would only spend CPU: each timed
 * wake-up is charged to the process's CPU time (in a virtual machine a timer interrupt is an exit
 * to the host), so an idle agent that woke every 20 ms would spend CPU doing nothing
 * (test_datacarrier.c, idle_consumer_sleeps_until_a_store, checks it does not). There is no
 * sched_yield phase and no long spin because an agent's consumer shares the machine with the
 * application: on two cores a consumer that spins or yields while traffic is sparse takes CPU time
 * from the application's threads.
 *
 * Why the nap: under steady moderate traffic (a server's requests, each storing one segment)
 * waking the consumer for every item costs the application thread a futex_wake system call and
 * the machine a context switch per item, and the consumer then handles batches of one. Napping
 * lets items gather for at most one nap, so each wake handles a batch; under a burst the
 * half-full rule wakes it at once; after a quiet nap the next item wakes it immediately.
 *
 * How long a nap is: the consume cycle (dc_consume's `consume_cycle_ms`; 20 ms when 0, the Java
 * DataCarrier's default consumeCycle). Each wake costs the consumer CPU (switching back in, the
 * futex return; the agent's rate_bench prints its cost per segment with two cycles) and each
 * wake's batch is one write for a reporter that writes per batch, so a caller
 * that can let items wait longer pays less per item: the agent naps 500 ms (agent
 * pipeline/pipeline.c). The half-full wake bounds the backlog whatever the cycle. A BLOCKING
 * carrier never naps: there a producer that found its ring full is waiting for this consumer, and a
 * nap would add a futex round trip to every refill.
 */
enum { SPIN_PASSES = 32 };

void dc__consumer_wake(dc__consumer_t *consumer)
{
    /* relaxed exchange: it only elects one waker among racing producers; the ordering that
       matters is on wake_word. Whoever reads 1 here owns the wake. */
    if (atomic_exchange_explicit(&consumer->sleeping, 0, memory_order_relaxed) != 0) {
        /* release: pairs with the consumer's acquire load of wake_word in
           consumer_idle (dc_consumer.c) (a changed word makes its futex_wait return at once). */
        atomic_fetch_add_explicit(&consumer->wake_word, 1, memory_order_release);
        dc__futex_wake(&consumer->wake_word, 1);
    }
}

/*
 * Naps for the consume cycle unless a producer wakes it (a ring
 * half full) or shutdown does. No ordering argument is needed: the nap is bounded, and the pass
 * after it sees whatever was stored.
 */
static void consumer_nap(dc__consumer_t *self)
{
    /* acquire: pairs with the release increment in dc__consumer_wake (and dc__consumers_join):
       a bump after this load makes the futex_wait below return at once. */
    uint32_t word = atomic_load_explicit(&self->wake_word, memory_order_acquire);
    /* relaxed: producers use the value only to decide whether to wake us early. */
    atomic_store_explicit(&self->sleeping, DC__NAPPING, memory_order_relaxed);
    dc__futex_wait(&self->wake_word, word, self->carrier->consume_cycle_ms);
    /* relaxed: as in consumer_idle. */
    atomic_store_explicit(&self->sleeping, DC__AWAKE, memory_order_relaxed);
}

/*
 * Goes to sleep until a producer stores (or shutdown), unless one stored meanwhile.
 *
 * No lost wake-up. Producer: P1 claim CAS on tail (seq_cst), P2 load sleeping (seq_cst).
 * Consumer: B1 store sleeping = 1 (seq_cst), B2 load tail (seq_cst, dc__ring_has_claims). In
 * the total order S of these four, either P2 follows B1 (the producer sees 1 and wakes us) or
 * P2 precedes B1, and then P1 precedes B2 (the consumer sees the claim and does not sleep).
 * A wake that lands between B2 and the futex_wait is not lost either: we read wake_word (W)
 * before B1, the waker bumps it before futex_wake, and the kernel compares it before sleeping.
 * Shutdown stores `stopping` then bumps wake_word the same way.
 */
static void consumer_idle(dc__consumer_t *self)
{
    struct dc_carrier *c = self->carrier;
    /* acquire: pairs with the release increment in dc__consumer_wake (W). */
    uint32_t word = atomic_load_explicit(&self->wake_word, memory_order_acquire);
    atomic_store_explicit(&self->sleeping, DC__SLEEPING, memory_order_seq_cst); /* B1 */
    bool work = atomic_load_explicit(&c->stopping, memory_order_seq_cst) != DC__RUN;
    for (uint32_t k = self->index; !work && k < c->channel_count; k += c->n_consumers) {
        work = dc__ring_has_claims(&c->rings[k]); /* B2 */
    }
    if (!work) {
        dc__futex_wait(&self->wake_word, word, 0); /* no timeout: see the top of the file */
    }
    /* relaxed: only this thread and the electing exchange use the flag; the next B1 is
       seq_cst again. */
    atomic_store_explicit(&self->sleeping, DC__AWAKE, memory_order_relaxed);
}

/* One pass over the owned rings; final = drain everything claimed before the close. */
static size_t consumer_pass(dc__consumer_t *self, bool final)
{
    struct dc_carrier *c = self->carrier;
    size_t n = 0;
    for (uint32_t k = self->index; k < c->channel_count; k += c->n_consumers) {
        dc__ring_t *ring = &c->rings[k];
        size_t room = self->batch_cap - n;
        size_t cap = (size_t)ring->mask + 1;
        if (room > cap) {
            room = cap; /* one ring's share of the batch; keeps sum(caps) enough */
        }
        n += final ? dc__ring_drain_final(ring, self->batch + n, room)
                   : dc__ring_drain(ring, self->batch + n, room);
    }
    if (n != 0) {
        c->consume_fn(c->ctx, self->batch, n);
        /* relaxed: this thread is the only writer of its counter. */
        uint64_t done = atomic_load_explicit(&self->consumed, memory_order_relaxed) + n;
        /* release: pairs with the acquire load in dc_carrier_stats, which then reads tails at
           least as new as the claims of the items counted here (consumed <= produced). */
        atomic_store_explicit(&self->consumed, done, memory_order_release);
    }
    return n;
}

static void *consumer_main(void *arg)
{
    dc__consumer_t *self = arg;
    struct dc_carrier *c = self->carrier;
    char tname[16];
    snprintf(tname, sizeof tname, "%.10s-c%u", c->name, self->index);
    pthread_setname_np(pthread_self(), tname);

    unsigned spins = SPIN_PASSES; /* empty passes since the last items; spin only after items */
    bool napped = false;          /* since the last items: the next idle step is consumer_idle */
    for (;;) {
        /* acquire: pairs with the seq_cst store in dc_carrier_shutdown, made after every ring
           was closed; so a final pass sees the final tails. */
        uint32_t stop = atomic_load_explicit(&c->stopping, memory_order_acquire);
        if (stop == DC__STOP_NOW) {
            break;
        }
        size_t n = consumer_pass(self, stop == DC__STOP_DRAIN);
        if (stop == DC__STOP_DRAIN) {
            break;
        }
        if (n != 0) {
            spins = 0;
            napped = false;
        } else if (spins < SPIN_PASSES) {
            spins++;
        } else if (!napped && c->strategy == DC_STRATEGY_IF_POSSIBLE) {
            consumer_nap(self);
            napped = true;
        } else {
            consumer_idle(self); /* a wake brings items (and resets both); a signal idles again */
        }
    }
    return NULL;
}

/* Publishes the owners of the rings. seq_cst store, partner: the seq_cst load in
   dc__consumer_notify. A producer that read NULL did so before this store in S, so its claim
   CAS precedes, in S, the consumer thread's seq_cst tail loads, which happen after this store
   (pthread_create), and the thread's first pass or its B2 check finds the item. */
static void consumers_attach(struct dc_carrier *c, uint32_t n)
{
    for (uint32_t k = 0; k < c->channel_count; k++) {
        atomic_store_explicit(&c->rings[k].owner, &c->consumers[k % n], memory_order_seq_cst);
    }
}

/* Undoes consumers_attach after a failed start (seq_cst for symmetry with the attach; no
   consumer runs any more, producers seeing NULL simply skip the wake). */
static void consumers_detach(struct dc_carrier *c)
{
    for (uint32_t k = 0; k < c->channel_count; k++) {
        atomic_store_explicit(&c->rings[k].owner, NULL, memory_order_seq_cst);
    }
}

/* Allocates the batches (the only allocation of the consume path, done up front). */
static int consumers_prepare(struct dc_carrier *c, uint32_t n)
{
    size_t cap = (size_t)c->rings[0].mask + 1;
    for (uint32_t i = 0; i < n; i++) {
        dc__consumer_t *self = &c->consumers[i];
        uint32_t owned = (c->channel_count - i + n - 1) / n; /* rings k = i, i+n, ... */
        self->carrier = c;
        self->index = i;
        self->batch_cap = cap * owned;
        self->batch = malloc(self->batch_cap * sizeof(void *));
        self->started = 0;
        if (self->batch == NULL) {
            for (uint32_t j = 0; j <= i; j++) {
                free(c->consumers[j].batch);
                c->consumers[j].batch = NULL;
            }
            return DC_ENOMEM;
        }
    }
    return 0;
}

void dc__consumers_join(struct dc_carrier *c)
{
    for (uint32_t i = 0; i < c->n_consumers; i++) {
        dc__consumer_t *self = &c->consumers[i];
        if (self->started) {
            /* Same bump as dc__consumer_wake, unconditionally: stopping is already set. */
            atomic_fetch_add_explicit(&self->wake_word, 1, memory_order_release);
            dc__futex_wake(&self->wake_word, 1);
            pthread_join(self->thread, NULL);
            self->started = 0;
        }
        free(self->batch);
        self->batch = NULL;
    }
}

int dc_consume(dc_carrier_t *c, dc_consume_fn consume, dc_on_exit_fn on_exit, void *ctx,
               uint32_t n_threads, uint32_t consume_cycle_ms)
{
    if (c == NULL || consume == NULL || n_threads == 0 || n_threads > c->channel_count) {
        return DC_EINVAL;
    }
    pthread_mutex_lock(&c->lifecycle);
    if (c->state != DC__STATE_CREATED) {
        pthread_mutex_unlock(&c->lifecycle);
        return DC_ESTATE;
    }
    int rc = consumers_prepare(c, n_threads);
    if (rc != 0) {
        pthread_mutex_unlock(&c->lifecycle);
        return rc;
    }
    c->consume_fn = consume;
    c->on_exit = on_exit;
    c->ctx = ctx;
    c->n_consumers = n_threads;
    c->consume_cycle_ms = consume_cycle_ms ? consume_cycle_ms : 20;
    consumers_attach(c, n_threads);
    for (uint32_t i = 0; i < n_threads; i++) {
        if (pthread_create(&c->consumers[i].thread, NULL, consumer_main, &c->consumers[i]) != 0) {
            /* Undo: stop the started threads without a final drain; items stay stored. */
            atomic_store_explicit(&c->stopping, DC__STOP_NOW, memory_order_seq_cst);
            dc__consumers_join(c);
            consumers_detach(c);
            /* relaxed: no consumer thread exists any more. */
            atomic_store_explicit(&c->stopping, DC__RUN, memory_order_relaxed);
            c->n_consumers = 0;
            pthread_mutex_unlock(&c->lifecycle);
            return DC_ETHREAD;
        }
        c->consumers[i].started = 1;
    }
    c->state = DC__STATE_CONSUMING;
    pthread_mutex_unlock(&c->lifecycle);
    return 0;
}
