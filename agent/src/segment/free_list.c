/*
 * free_list.c - the give-back of a lock-free free list (free_list.h).
 */
#include "free_list.h"

#include <stdlib.h>

void sw__free_list_give_back(sw__free_list_t *list, sw__free_node_t *rest)
{
    for (;;) {
        sw__free_node_t *expected = NULL;
        /* release: republishes the blocks of `rest` (acquired by the caller's take_all) to the
           next taker's acquire exchange. relaxed on failure: we only learn that it is not
           empty and take it below. */
        if (atomic_compare_exchange_strong_explicit(&list->head, &expected, rest,
                                                    memory_order_release, memory_order_relaxed)) {
            return;
        }
        sw__free_node_t *fresh = sw__free_list_take_all(list);
        if (fresh == NULL) {
            continue; /* another taker emptied it first: try the empty case again */
        }
        sw__free_node_t *tail = fresh;
        while (tail->next != NULL) {
            tail = tail->next;
        }
        tail->next = rest;
        rest = fresh;
    }
}

void sw__free_list_free_all(sw__free_list_t *list)
{
    sw__free_node_t *node = sw__free_list_take_all(list);
    while (node != NULL) {
        sw__free_node_t *next = node->next;
        free(node); /* the node is the block's first member: the same address */
        node = next;
    }
}
