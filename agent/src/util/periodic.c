/*
 * periodic.c - the fixed-period thread of periodic.h.
 */
#include "periodic.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#include "skywalking.h"
#include "swc_clock.h"

struct sw__periodic {
    /* Immutable while the thread runs. */
    uint32_t period_ms;
    sw__periodic_first_t first;
    void (*run)(void *arg);
    void (*interrupt)(void *arg);
    void *arg;
    pthread_t thread;

    pthread_mutex_t lock;
    pthread_cond_t wake; /* CLOCK_MONOTONIC; signalled by stop() */
    bool stopping;       /* protected by lock */
};

static void *periodic_main(void *arg)
{
    sw__periodic_t *p = arg;
    int64_t next = swc__monotonic_ms();
    if (p->first == SW__PERIODIC_AT_START) {
        p->run(p->arg); /* a stop() meanwhile interrupts it and waits, as for any run */
    }
    for (;;) {
        next += p->period_ms;
        pthread_mutex_lock(&p->lock);
        int rc = 0;
        while (!p->stopping && rc != ETIMEDOUT) {
            rc = swc__cond_wait_until(&p->wake, &p->lock, next);
        }
        bool stop = p->stopping;
        pthread_mutex_unlock(&p->lock);
        if (stop) {
            return NULL;
        }
        p->run(p->arg);
        int64_t now = swc__monotonic_ms();
        if (now > next + p->period_ms) {
            next = now; /* the run overran a whole period: no catch-up burst */
        }
    }
}

int sw__periodic_start(const char *name, uint32_t period_ms, sw__periodic_first_t first,
                       void (*run)(void *arg), void (*interrupt)(void *arg), void *arg,
                       sw__periodic_t **out)
{
    sw__periodic_t *p = calloc(1, sizeof *p);
    if (p == NULL) {
        return SW_ENOMEM;
    }
    p->period_ms = period_ms ? period_ms : 1;
    p->first = first;
    p->run = run;
    p->interrupt = interrupt;
    p->arg = arg;
    pthread_mutex_init(&p->lock, NULL);
    if (swc__cond_init_monotonic(&p->wake) != 0) {
        pthread_mutex_destroy(&p->lock);
        free(p);
        return SW_ENOMEM;
    }
    if (pthread_create(&p->thread, NULL, periodic_main, p) != 0) {
        pthread_cond_destroy(&p->wake);
        pthread_mutex_destroy(&p->lock);
        free(p);
        return SW_ETHREAD;
    }
    pthread_setname_np(p->thread, name);
    *out = p;
    return 0;
}

void sw__periodic_stop(sw__periodic_t *p)
{
    if (p == NULL) {
        return;
    }
    pthread_mutex_lock(&p->lock);
    p->stopping = true;
    pthread_cond_signal(&p->wake);
    pthread_mutex_unlock(&p->lock);
    if (p->interrupt != NULL) {
        p->interrupt(p->arg);
    }
    pthread_join(p->thread, NULL);
    pthread_cond_destroy(&p->wake);
    pthread_mutex_destroy(&p->lock);
    free(p);
}
