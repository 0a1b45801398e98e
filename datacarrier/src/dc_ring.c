/*
 * dc_ring.c - the slow paths of one ring: BLOCKING waits, draining, closing.
 * The slot protocol and the fast push are in dc_ring.h.
 */
#include "dc_ring.h"

#include <limits.h>
#include <sched.h>

/* Spins before a BLOCKING producer goes to sleep: the consumer usually frees a slot within a
   few microseconds, and a futex round trip costs more than that. Then a few yields, which on
   an oversubscribed machine hand the CPU to the consumer. */
enum { PUSH_SPINS = 64, PUSH_YIELDS = 4 };

void dc__ring_init(dc__ring_t *ring, dc__slot_t *slots, uint64_t capacity, bool blocking)
{
    for (uint64_t i = 0; i < capacity; i++) {
        atomic_init(&slots[i].item, NULL);
    }
    atomic_init(&ring->tail, 0);
    atomic_init(&ring->head_cache, 0);
    ring->slots = slots;
    ring->mask = capacity - 1;
    ring->blocking = blocking;
    atomic_init(&ring->owner, NULL);
    atomic_init(&ring->space_waiters, 0);
    atomic_init(&ring->space_gen, 0);
    atomic_init(&ring->dropped, 0);
    atomic_init(&ring->rejected, 0);
    atomic_init(&ring->head, 0);
}

/*
 * Why a sleeping BLOCKING producer is always woken (no lost wake-up):
 *
 *   producer (here)                          consumer (notify_space)
 *   A1 space_waiters += 1        seq_cst     C0 head = head + n           release
 *   A2 g = space_gen             seq_cst     C1 space_gen += 1            seq_cst
 *   A3 retry push (acquire head)             C2 w = space_waiters         seq_cst
 *   A4 futex_wait(space_gen, g) if FULL      C3 futex_wake if w > 0
 *
 * All of A1, A2, C1, C2 are seq_cst, so they sit in one total order S consistent with program
 * order. If C2 does not see A1, then C2 precedes A1 in S, hence C1 precedes A2: A2 reads C1's
 * value (or a later one) and, being an acquire of C1's release RMW, makes C0 visible to A3: A3
 * finds the room through head_cache or, when the cache still looks full, reloads head and sees
 * C0's value or a later one, so the retry sees the freed slot (or another producer took it, and we
 * wait for the next drain, whose C2 will see our A1). If C2 does see A1, the consumer wakes after
 * C1; if we reach A4 after C1 the kernel sees space_gen != g and returns at once, otherwise we are
 * asleep and woken. dc__ring_close does C1 (after setting CLOSED in tail, so A3 sees CLOSED) and
 * always wakes. The only theoretical miss is space_gen wrapping exactly 2^32 times between A2 and
 * A4.
 */
dc__push_result_t dc__ring_push_wait(dc__ring_t *ring, void *item)
{
    dc__push_result_t res;
    for (int i = 0; i < PUSH_SPINS + PUSH_YIELDS; i++) {
        res = dc__ring_push(ring, item);
        if (res != DC__PUSH_FULL) {
            return res;
        }
        if (i < PUSH_SPINS) {
            dc__cpu_relax();
        } else {
            sched_yield();
        }
    }
    for (;;) {
        atomic_fetch_add_explicit(&ring->space_waiters, 1, memory_order_seq_cst);    /* A1 */
        uint32_t gen = atomic_load_explicit(&ring->space_gen, memory_order_seq_cst); /* A2 */
        res = dc__ring_push(ring, item);                                             /* A3 */
        if (res == DC__PUSH_FULL) {
            dc__futex_wait(&ring->space_gen, gen, 0); /* A4 */
        }
        /* relaxed: only the increment (A1) takes part in the argument above. */
        atomic_fetch_sub_explicit(&ring->space_waiters, 1, memory_order_relaxed);
        if (res != DC__PUSH_FULL) {
            return res;
        }
    }
}

/* C1..C3 of the argument above; called after a drain freed at least one slot. */
static void notify_space(dc__ring_t *ring)
{
    atomic_fetch_add_explicit(&ring->space_gen, 1, memory_order_seq_cst);        /* C1 */
    if (atomic_load_explicit(&ring->space_waiters, memory_order_seq_cst) != 0) { /* C2 */
        dc__futex_wake(&ring->space_gen, INT_MAX);                               /* C3 */
    }
}

/*
 * Takes the run of published slots, clearing each, then frees all of it with ONE release store
 * of head (C0). A producer writes a slot's next lap only after it saw the new head, so under
 * any load each slot line moves between the cores about once per lap in each direction, and
 * carries eight items each time.
 */
size_t dc__ring_drain(dc__ring_t *ring, void **out, size_t room)
{
    /* relaxed: this thread is the only writer of head. */
    uint64_t head = atomic_load_explicit(&ring->head, memory_order_relaxed);
    size_t n = 0;
    while (n < room) {
        _Atomic(void *) *slot = &ring->slots[(head + n) & ring->mask].item;
        /* acquire: pairs with the producer's release store of the item in dc__ring_push. */
        void *item = atomic_load_explicit(slot, memory_order_acquire);
        if (item == NULL) {
            break;
        }
        /* relaxed: ordered before the next lap's store by the release store of head below. */
        atomic_store_explicit(slot, NULL, memory_order_relaxed);
        out[n++] = item;
    }
    if (n != 0) {
        /* release: pairs with the producers' acquire load of head in dc__ring_head_refresh; our
           reads and clears of the slots above happen before their next-lap stores. This is
           C0. */
        atomic_store_explicit(&ring->head, head + n, memory_order_release);
        if (ring->blocking) {
            notify_space(ring);
        }
    }
    return n;
}

size_t dc__ring_drain_final(dc__ring_t *ring, void **out, size_t room)
{
    /* relaxed: the caller saw `stopping` with acquire, which happens after dc__ring_close's RMW
       on this word; coherence then gives us the closed value, and tail never changes again. */
    uint64_t final = atomic_load_explicit(&ring->tail, memory_order_relaxed) & ~DC__RING_CLOSED;
    size_t n = 0;
    /* relaxed: head is written only by this thread. */
    while (atomic_load_explicit(&ring->head, memory_order_relaxed) != final && n < room) {
        size_t got = dc__ring_drain(ring, out + n, room - n);
        n += got;
        if (got == 0) {
            /* A producer claimed the next position before the close but has not published
               yet; it is a few instructions away from doing so (unless preempted). */
            sched_yield();
        }
    }
    return n;
}

uint64_t dc__ring_close(dc__ring_t *ring)
{
    /* seq_cst: orders the close before the space_gen bump below (partner: A2/A3 in
       dc__ring_push_wait); the modification order of tail decides every racing claim. */
    uint64_t tail = atomic_fetch_or_explicit(&ring->tail, DC__RING_CLOSED, memory_order_seq_cst);
    atomic_fetch_add_explicit(&ring->space_gen, 1, memory_order_seq_cst);
    dc__futex_wake(&ring->space_gen, INT_MAX);
    return tail & ~DC__RING_CLOSED;
}
