/*
 * free_list.h - a lock-free list of free blocks shared by threads (internal): the segment pool's
 * blocks (segment_pool.h) and the encoded-segment chunks (encode/chunk.h).
 *
 * The shape of the Linux kernel's llist.h, which has no ABA problem: any thread pushes a chain
 * with a CAS; a taker never pops one node from the shared head but takes the WHOLE list with
 * one exchange, keeps what it needs and gives the rest back (sw__free_list_give_back).
 *
 * A block type embeds sw__free_node_t as its FIRST member, so that a pointer to the node is a
 * pointer to the block (C11 6.7.2.1: a pointer to a struct, converted, points to its first
 * member and back).
 */
#ifndef SW_SEGMENT_FREE_LIST_H
#define SW_SEGMENT_FREE_LIST_H

#include <stdatomic.h>
#include <stddef.h>

typedef struct sw__free_node {
    struct sw__free_node *next; /* meaningful only while the block is free or cached */
} sw__free_node_t;

typedef struct sw__free_list {
    /* Pushers CAS with release (partner: the acquire exchange of the takers), so a taker sees
       every write the pusher made to the blocks it pushed. */
    _Atomic(sw__free_node_t *) head;
} sw__free_list_t;

static inline void sw__free_list_init(sw__free_list_t *list)
{
    atomic_init(&list->head, NULL);
}

/* Pushes the chain first..last (linked through next). Any thread. */
static inline void sw__free_list_push_chain(sw__free_list_t *list, sw__free_node_t *first,
                                            sw__free_node_t *last)
{
    sw__free_node_t *head = atomic_load_explicit(&list->head, memory_order_relaxed);
    do {
        last->next = head;
        /* release: publishes the blocks' contents and links to the acquire exchange in
           sw__free_list_take_all. A failed CAS reloads head (relaxed: we only link to it, the
           success path republishes). */
    } while (!atomic_compare_exchange_weak_explicit(&list->head, &head, first, memory_order_release,
                                                    memory_order_relaxed));
}

/* Takes every block (NULL: none). Any thread. */
static inline sw__free_node_t *sw__free_list_take_all(sw__free_list_t *list)
{
    /* acquire: partner of the release CAS in push_chain / give_back. */
    return atomic_exchange_explicit(&list->head, NULL, memory_order_acquire);
}

/* A hint (no ordering): whether the list looked non-empty. */
static inline int sw__free_list_peek(sw__free_list_t *list)
{
    return atomic_load_explicit(&list->head, memory_order_relaxed) != NULL;
}

/*
 * Gives `rest` (a chain taken with take_all, tail unknown) back in O(1) when the list is still
 * empty, which it almost always is: the caller emptied it a few instructions ago. If someone
 * pushed meanwhile, takes what they pushed (only the pushes of that short window), walks it to
 * its tail, puts `rest` behind it and tries again. Each node is walked at most once per such
 * race, so the cost is O(1) amortised per push. The CAS from NULL has no ABA problem: whenever it
 * succeeds the list is empty, and `rest` becomes all of it.
 */
void sw__free_list_give_back(sw__free_list_t *list, sw__free_node_t *rest);

/* Takes every block and free()s it (each was malloc'd with its node first). Pool destroy only. */
void sw__free_list_free_all(sw__free_list_t *list);

#endif /* SW_SEGMENT_FREE_LIST_H */
