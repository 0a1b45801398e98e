/*
 * preload_lock.h - the locks of the preload's plugins (internal): one mutex per plugin, all
 * made fork-safe by one mechanism.
 *
 * Each plugin keeps what it knows about the library's handles in a map (preload_handle_map.h)
 * or a list that its lock protects. A thread of the parent may be inside such a critical section
 * when another thread forks; the child has only the forking thread, so the lock would stay held
 * for ever there (the child's first redisFree or PQfinish would hang) and the map could be half
 * changed. The preload's constructor therefore registers one pthread_atfork triple
 * (sw__plugin_locks_atfork) that takes every plugin lock before fork, in the order of
 * sw__plugin_lock_id_t, and releases them all in the parent and in the child, as
 * pthread_atfork(3) intends.
 *
 * Rules for a critical section under a plugin lock: it is short (map operations, malloc/free,
 * copies), calls no application code and no interposed function, takes no other plugin lock
 * and not the preload's start lock, and never forks. Then the prepare handler cannot deadlock:
 * it waits at most for the sections in progress to end.
 */
#ifndef SW_PRELOAD_LOCK_H
#define SW_PRELOAD_LOCK_H

typedef enum sw__plugin_lock_id {
    SW__PLUGIN_LOCK_CURL,       /* preload_curl.c: the easy handles' URL and header list */
    SW__PLUGIN_LOCK_CURL_MULTI, /* preload_curl_multi.c: transfers in flight */
    SW__PLUGIN_LOCK_MHD,        /* preload_mhd.c: the handler wrappers of running daemons */
    SW__PLUGIN_LOCK_PQ,         /* preload_pq.c: connections, prepared statements, pending */
    SW__PLUGIN_LOCK_MARIADB,    /* preload_mariadb.c: connections and statements */
    SW__PLUGIN_LOCK_HIREDIS,    /* preload_hiredis.c: appended commands per context */
    SW__PLUGIN_LOCK_RDKAFKA,    /* preload_rdkafka.c: librdkafka clients and topic handles */

    SW__PLUGIN_LOCK_GRPC, /* preload_grpc.c: calls, completions awaited, registrations */
    SW__PLUGIN_LOCK_COUNT
} sw__plugin_lock_id_t;

/* Takes plugin lock `id` (blocks while another thread is in a section of the same plugin, or
   while a fork is in progress). Any thread. */
void sw__plugin_lock(sw__plugin_lock_id_t id);

/* Releases plugin lock `id`, held by the calling thread. */
void sw__plugin_unlock(sw__plugin_lock_id_t id);

/* Registers the pthread_atfork triple of every plugin lock. Called once, by the preload's
   constructor (before the program can fork). */
void sw__plugin_locks_atfork(void);

#endif /* SW_PRELOAD_LOCK_H */
