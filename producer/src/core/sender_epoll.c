/*
 * sender_epoll.c - the sender's epoll set and its wakeup eventfd, and their recovery when the
 * host program closes them under the producer (a daemon that closes every descriptor after
 * start-up, a careless close() of a number it does not own). epoll_wait then fails with EBADF
 * (or EINVAL once the number names something else) at once, on every call: without recovery
 * the sender would spin at 100% of a core. The sender makes a new epoll set and registers
 * what is still its own again; a descriptor whose inode is no longer the one the producer
 * opened is not the producer's any more and is never closed, read or written by it. Sender
 * thread only, apart from kp__sender_epoll_open (kp_producer_new, before the thread starts).
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "core/producer_impl.h"

static int register_wake(kp_producer_t *p, int wakefd)
{
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = KP__EPOLL_KEY_WAKE};
    return epoll_ctl(p->epfd, EPOLL_CTL_ADD, wakefd, &ev);
}

/* Any thread: the sender has work (a record appended, metadata wanted, closing). */
void kp__producer_wake(void *arg)
{
    kp_producer_t *p = arg;
    /* acq_rel: pairs with the release store in kp__sender_poll that re-arms the flag. */
    if (atomic_exchange_explicit(&p->wake_pending, true, memory_order_acq_rel)) {
        return;
    }
    uint64_t one = 1;
    /* Acquire: partner of the release store of a replaced eventfd (sender_epoll.c). */
    int fd = atomic_load_explicit(&p->wakefd, memory_order_acquire);
    while (write(fd, &one, sizeof(one)) < 0 && errno == EINTR)
        ;
}

/* A new eventfd for kp__producer_wake. Returns it, or -1 (errno set). */
static int wake_open(kp_producer_t *p)
{
    int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (fd >= 0) {
        p->wakefd_ino = kp__fd_ino(fd);
        /* Release: partner of the acquire load in kp__producer_wake, which then writes to
           this eventfd. */
        atomic_store_explicit(&p->wakefd, fd, memory_order_release);
    }
    return fd;
}

int kp__sender_epoll_open(kp_producer_t *p)
{
    p->epfd = epoll_create1(EPOLL_CLOEXEC);
    p->epfd_ino = p->epfd >= 0 ? kp__fd_ino(p->epfd) : 0;
    int w = wake_open(p);
    return p->epfd >= 0 && w >= 0 && register_wake(p, w) == 0 ? 0 : KP_ENOMEM;
}

bool kp__sender_fd_ours(int fd, uint64_t ino)
{
    return fd >= 0 && ino != 0 && kp__fd_ino(fd) == ino;
}

/* Could not make a new epoll set or eventfd: recorded for kp_last_error, and the sender waits
 * without epoll this once (it tries again on its next pass; records expire meanwhile). */
static void recover_failed(kp_producer_t *p, const char *what, int err, int64_t timeout_ms)
{
    char msg[256];
    snprintf(msg, sizeof msg,
             "the program closed the producer's epoll descriptor and a new %s cannot be made "
             "(%s); nothing is sent until one can",
             what, strerror(err));
    kp__sender_set_error(p, KP_ENETWORK, msg);
    poll(NULL, 0, (int)timeout_ms); /* a bounded wait instead of a spin */
}

bool kp__sender_epoll_ours(const kp_producer_t *p)
{
    if (!kp__sender_fd_ours(p->epfd, p->epfd_ino)) {
        return false;
    }
    /* Every epoll set has the same anonymous inode: ours is the one our eventfd is in. */
    int w = atomic_load_explicit(&p->wakefd, memory_order_relaxed);
    if (w < 0) {
        return true; /* made before the eventfd (producer_free after a failed start) */
    }
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = KP__EPOLL_KEY_WAKE};
    return kp__sender_fd_ours(w, p->wakefd_ino) && epoll_ctl(p->epfd, EPOLL_CTL_MOD, w, &ev) == 0;
}

void kp__sender_epoll_recover(kp_producer_t *p, int64_t now, int64_t timeout_ms)
{
    bool set_ours = kp__sender_epoll_ours(p); /* before a new eventfd is made */
    int w = atomic_load_explicit(&p->wakefd, memory_order_relaxed); /* written by this thread */
    bool wake_gone = !kp__sender_fd_ours(w, p->wakefd_ino);
    if (wake_gone && (w = wake_open(p)) < 0) {
        recover_failed(p, "eventfd", errno, timeout_ms);
        return;
    }
    int ep = epoll_create1(EPOLL_CLOEXEC);
    if (ep < 0) {
        recover_failed(p, "epoll set", errno, timeout_ms);
        return;
    }
    if (set_ours) {
        close(p->epfd); /* still ours (EINVAL for another reason): replaced all the same */
    }
    p->epfd = ep;
    p->epfd_ino = kp__fd_ino(ep);
    if (register_wake(p, w) != 0) {
        recover_failed(p, "registration of the eventfd", errno, timeout_ms);
        return;
    }
    if (wake_gone) {
        kp__producer_wake(p); /* a wakeup written to the lost eventfd is not lost */
    }
    for (int i = 0; i < p->n_conns; i++) {
        kp__conn_t *c = p->conns[i];
        if (c->fd < 0) {
            continue;
        }
        struct epoll_event ev = {.events = EPOLLIN | (c->want_write ? EPOLLOUT : 0),
                                 .data.u64 = kp__epoll_key_conn(c->node_id)};
        if (!kp__sender_fd_ours(c->fd, c->sock_ino)) {
            c->fd = -1; /* closed by the program, maybe reused: no longer ours to close */
            kp__sender_disconnect(p, c, now);
        } else if (epoll_ctl(p->epfd, EPOLL_CTL_ADD, c->fd, &ev) != 0) {
            kp__sender_disconnect(p, c, now);
        }
    }
}
