/*
 * preload_handle_map.h - what a plugin remembers about a library's handle (a CURL *, a PGconn *,
 * a MYSQL *, a redisContext *), found by the handle's address. The libraries give no place of
 * their own to keep it, so each plugin keeps one map.
 *
 * A plugin's record starts with a sw__handle_node_t. The map does not lock: every call below
 * runs with the plugin's own lock held (preload_lock.h, which also makes it fork-safe).
 */
#ifndef SW_PRELOAD_HANDLE_MAP_H
#define SW_PRELOAD_HANDLE_MAP_H

#include <stddef.h>

#define SW__HANDLE_MAP_BUCKETS 64

typedef struct sw__handle_node {
    struct sw__handle_node *next;
    const void *handle;
} sw__handle_node_t;

typedef struct sw__handle_map {
    sw__handle_node_t *buckets[SW__HANDLE_MAP_BUCKETS];
} sw__handle_map_t;

/* The node of `handle`, or NULL. */
sw__handle_node_t *sw__handle_map_find(sw__handle_map_t *map, const void *handle);

/* The node of `handle`; when there is none, a zeroed record of `size` bytes (whose first member
 * is the node) is allocated and added. NULL when that allocation fails. */
sw__handle_node_t *sw__handle_map_get(sw__handle_map_t *map, const void *handle, size_t size);

/* Adds `node` (its handle set by the caller; none already in the map for that handle). */
void sw__handle_map_add(sw__handle_map_t *map, sw__handle_node_t *node);

/* Removes the node of `handle` and returns it for the caller to free, or NULL. */
sw__handle_node_t *sw__handle_map_take(sw__handle_map_t *map, const void *handle);

#endif /* SW_PRELOAD_HANDLE_MAP_H */
