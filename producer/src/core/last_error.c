/*
 * last_error.c - what kp_last_error reports (producer.c): the last connection-level failure
 * the sender recorded, under p->error_lock. Below the sender's files, which record into it,
 * and producer.c, which reads it.
 */
#include <pthread.h>
#include <stdio.h>

#include "core/producer_impl.h"

void kp__sender_set_error(kp_producer_t *p, int code, const char *msg)
{
    pthread_mutex_lock(&p->error_lock);
    if (code != 0 || p->last_error != KP_ELIMIT) { /* a ready connection clears no KP_ELIMIT */
        p->last_error = code;
        snprintf(p->last_error_msg, sizeof p->last_error_msg, "%s", msg ? msg : "");
    }
    pthread_mutex_unlock(&p->error_lock);
}

void kp__sender_limit_error(kp_producer_t *p, const char *msg)
{
    kp__sender_set_error(p, KP_ELIMIT, msg);
    kp__metadata_fail_waiters(&p->md, KP_ELIMIT);
}

void kp__sender_clear_limit_error(kp_producer_t *p)
{
    pthread_mutex_lock(&p->error_lock);
    if (p->last_error == KP_ELIMIT) {
        p->last_error = 0;
        p->last_error_msg[0] = '\0';
    }
    pthread_mutex_unlock(&p->error_lock);
}
