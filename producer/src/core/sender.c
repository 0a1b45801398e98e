/*
 * sender.c - the Sender thread's loop (Java: Sender.runOnce): metadata update -> (producer id) ->
 * ready -> drain -> ProduceRequest per node -> poll -> responses -> callbacks / retries / expiry.
 */
#include <stdlib.h>

#include "swc_clock.h"
#include "core/producer_impl.h"

/* Everything still pending when the producer is forced to close: fail it. */
static void fail_all(kp_producer_t *p, int64_t now)
{
    for (int i = 0; i < p->n_conns; i++) {
        if (p->conns[i]->fd >= 0 || p->conns[i]->in_flight.head) {
            kp__sender_disconnect(p, p->conns[i], now);
        }
    }
    kp__sender_expire(p, now, true);
}

void *kp__sender_run(void *arg)
{
    kp_producer_t *p = arg;
    p->control_handler = &kp__sender_control_handler;
    p->produce_handler = &kp__sender_produce_handler;
    int64_t last_expire = 0;
    for (;;) {
        int64_t now = swc__monotonic_ms();
        int state = atomic_load_explicit(&p->state, memory_order_acquire);
        if (state == KP__FORCE_CLOSE) {
            break;
        }
        if (state == KP__CLOSING && atomic_load_explicit(&p->pending, memory_order_acquire) == 0) {
            break;
        }
        if (p->md.version != p->pruned_version) { /* md.version: written by this thread */
            p->pruned_version = p->md.version;
            kp__sender_conns_prune(p);
        }
        kp__sender_maybe_update_metadata(p, now);
        if (p->idempotent) {
            kp__sender_maybe_init_pid(p, now);
        }
        int64_t timeout = kp__sender_send_produce(p, now);
        if (now - last_expire >= 10) {
            kp__sender_expire(p, now, false);
            last_expire = now;
        }
        int64_t md = kp__metadata_time_to_update(&p->md, now);
        if (md < timeout) {
            timeout = md;
        }
        if (timeout > 100) {
            timeout = 100; /* housekeeping: reconnects, expiry, request timeouts */
        }
        if (timeout < 0) {
            timeout = 0;
        }
        kp__sender_poll(p, timeout);
    }
    fail_all(p, swc__monotonic_ms());
    return NULL;
}
