/*
 * preload_lock.c - the plugins' fork-safe locks (see preload_lock.h).
 */
#include "preload_lock.h"

#include <pthread.h>

#include "../src/util/locality.h"

/* One cache line each: plugins used by different threads do not share one. */
typedef struct plugin_lock {
    _Alignas(64) pthread_mutex_t mutex;
} plugin_lock_t;

/* The locks themselves (global: they protect the plugins' global maps). */
static plugin_lock_t locks[] = {
    {PTHREAD_MUTEX_INITIALIZER}, {PTHREAD_MUTEX_INITIALIZER}, {PTHREAD_MUTEX_INITIALIZER},
    {PTHREAD_MUTEX_INITIALIZER}, {PTHREAD_MUTEX_INITIALIZER}, {PTHREAD_MUTEX_INITIALIZER},
    {PTHREAD_MUTEX_INITIALIZER},

    {PTHREAD_MUTEX_INITIALIZER}, /* SW__PLUGIN_LOCK_GRPC */
};
_Static_assert(sizeof locks / sizeof *locks == SW__PLUGIN_LOCK_COUNT,
               "one initialised mutex per sw__plugin_lock_id_t");

SW__HOT void sw__plugin_lock(sw__plugin_lock_id_t id)
{
    pthread_mutex_lock(&locks[id].mutex);
}

SW__HOT void sw__plugin_unlock(sw__plugin_lock_id_t id)
{
    pthread_mutex_unlock(&locks[id].mutex);
}

/* Before fork: every lock, in one fixed order (no section holds two, so any order is safe). */
static void fork_prepare(void)
{
    for (int i = 0; i < SW__PLUGIN_LOCK_COUNT; i++) {
        pthread_mutex_lock(&locks[i].mutex);
    }
}

/* After fork, in the parent and in the child: the forking thread took them all. */
static void fork_release(void)
{
    for (int i = SW__PLUGIN_LOCK_COUNT - 1; i >= 0; i--) {
        pthread_mutex_unlock(&locks[i].mutex);
    }
}

void sw__plugin_locks_atfork(void)
{
    (void)pthread_atfork(fork_prepare, fork_release, fork_release);
}
