/*
 * preload_handle_map.c - see preload_handle_map.h.
 */
#include "preload_handle_map.h"

#include <stdint.h>
#include <stdlib.h>

static sw__handle_node_t **bucket_of(sw__handle_map_t *map, const void *handle)
{
    /* Allocations are 16-byte aligned: the low bits say nothing. */
    return &map->buckets[((uintptr_t)handle >> 4) % SW__HANDLE_MAP_BUCKETS];
}

sw__handle_node_t *sw__handle_map_find(sw__handle_map_t *map, const void *handle)
{
    for (sw__handle_node_t *n = *bucket_of(map, handle); n != NULL; n = n->next) {
        if (n->handle == handle) {
            return n;
        }
    }
    return NULL;
}

sw__handle_node_t *sw__handle_map_get(sw__handle_map_t *map, const void *handle, size_t size)
{
    sw__handle_node_t *n = sw__handle_map_find(map, handle);
    if (n != NULL) {
        return n;
    }
    n = calloc(1, size);
    if (n != NULL) {
        n->handle = handle;
        sw__handle_map_add(map, n);
    }
    return n;
}

void sw__handle_map_add(sw__handle_map_t *map, sw__handle_node_t *node)
{
    sw__handle_node_t **b = bucket_of(map, node->handle);
    node->next = *b;
    *b = node;
}

sw__handle_node_t *sw__handle_map_take(sw__handle_map_t *map, const void *handle)
{
    for (sw__handle_node_t **pp = bucket_of(map, handle); *pp != NULL; pp = &(*pp)->next) {
        if ((*pp)->handle == handle) {
            sw__handle_node_t *n = *pp;
            *pp = n->next;
            return n;
        }
    }
    return NULL;
}
