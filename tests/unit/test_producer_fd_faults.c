/*
 * test_producer_fd_faults.c - the host program closing the producer's descriptors (a daemon
 * that closes every descriptor after start-up, a close() of a number it does not own).
 * Against the scripted broker test double (tests/support/scripted_broker.h): the test closes
 * the sender's epoll set (and its wakeup eventfd), found through the producer's internal
 * struct, and checks that the sender thread ("kp-sender", tests/support/thread_stat.h) does
 * not spin, that the producer delivers again, and that the descriptors the program opened
 * afterwards under the same numbers are neither written nor closed by the producer.
 *
 * The CPU bound is wide: a sender that spins on a failing epoll_wait burns a whole core (at
 * least several tenths of the window even on a loaded machine); an idle one wakes ten times
 * a second for housekeeping and needs milliseconds.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include "core/producer_impl.h"
#include "kproducer.h"
#include "producer_test_util.h"
#include "scripted_broker.h"
#include "test_util.h"
#include "thread_stat.h"

#define TOPIC   "fd-faults-topic"
#define WINDOW  3.0  /* s of wall time the sender's CPU is measured over */
#define CPU_MAX 0.15 /* s of CPU allowed in that window */

/* The fault is a close() of the sender's descriptor while the sender waits on it, which is
 * unsynchronized by nature: ThreadSanitizer reports it as the race it is. The default and
 * ASan presets run these tests. */
static void skip_under_tsan(void)
{
#if defined(__SANITIZE_THREAD__)
    cr_skip_test("the test closes descriptors the sender thread is waiting on, an "
                 "unsynchronized fault by design that ThreadSanitizer reports; the default "
                 "and asan presets run it");
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
    cr_skip_test("the test closes descriptors the sender thread is waiting on, an "
                 "unsynchronized fault by design that ThreadSanitizer reports; the default "
                 "and asan presets run it");
#endif
#endif
}

static atomic_int delivered_ok;

/* Sends one record and waits (bounded) for its delivery: `total` delivered so far. */
static void deliver_one(kp_producer_t *p, int total)
{
    int rc =
        kp_send(p, TOPIC, -1, "k", 1, "v", 1, NULL, 0, 0, producer_test_count_ok, &delivered_ok);
    cr_assert_eq(rc, KP_OK, "kp_send: %s", kp_err_name(rc));
    cr_assert_eq(kp_flush(p, 20000), KP_OK, "record %d not delivered within 20 s", total);
    cr_assert_eq(atomic_load_explicit(&delivered_ok, memory_order_relaxed), total);
}

static double sender_cpu_s(long *blocks)
{
    double ns = 0;
    cr_assert(thread_stat_read("kp-sender", &ns, blocks), "no thread named kp-sender");
    return ns / 1e9;
}

/* Checks the sender thread over WINDOW seconds from now: it used less than CPU_MAX of CPU,
 * and it blocked (in epoll_wait: at least every 100 ms) at least WINDOW * 3 times; a spin
 * never blocks, however loaded the machine is. `after` says what was done to it. */
static void expect_sender_idle(const char *after)
{
    long b0 = 0, b1 = 0;
    double c0 = sender_cpu_s(&b0);
    double end = now_s() + WINDOW;
    while (now_s() < end) {
        struct timespec ts = {0, 20 * 1000000};
        nanosleep(&ts, NULL); /* the measurement window itself, not synchronization */
    }
    double cpu = sender_cpu_s(&b1) - c0;
    cr_assert_lt(cpu, CPU_MAX, "the sender used %.2f s of CPU in %.0f s once %s", cpu, WINDOW,
                 after);
    cr_assert_geq(b1 - b0, (long)(WINDOW * 3),
                  "the sender blocked %ld times in %.0f s once %s (a spin on epoll_wait)", b1 - b0,
                  WINDOW, after);
}

Test(producer_fd_faults, closed_epoll_set_is_recreated, .timeout = 120)
{
    skip_under_tsan();
    sb_broker_t *sb = sb_start(TOPIC, 1, NULL, NULL);
    kp_producer_t *p = producer_test_new(sb->bootstrap, NULL);
    deliver_one(p, 1);
    cr_assert_eq(close(p->epfd), 0, "close of the sender's epoll set: %s", strerror(errno));
    expect_sender_idle("its epoll set was closed");
    deliver_one(p, 2);
    cr_assert_eq(kp_close(p, 5000), KP_OK);
    sb_stop(sb);
}

/* The program closes the epoll set and the eventfd, and opens a pipe, which most likely
 * takes their numbers: epoll_wait then fails with EINVAL (not an epoll set), and the
 * eventfd's number is the program's pipe, which the producer must neither write nor close. */
Test(producer_fd_faults, closed_descriptors_reused_by_the_program, .timeout = 120)
{
    skip_under_tsan();
    sb_broker_t *sb = sb_start(TOPIC, 1, NULL, NULL);
    kp_producer_t *p = producer_test_new(sb->bootstrap, NULL);
    deliver_one(p, 1);
    int wakefd = atomic_load_explicit(&p->wakefd, memory_order_relaxed);
    cr_assert_eq(close(p->epfd), 0);
    cr_assert_eq(close(wakefd), 0);
    int pipefd[2];
    cr_assert_eq(pipe2(pipefd, O_NONBLOCK | O_CLOEXEC), 0);
    expect_sender_idle("its descriptors were closed and reused");
    deliver_one(p, 2);
    deliver_one(p, 3);
    cr_assert_eq(kp_close(p, 5000), KP_OK);
    cr_assert_neq(fcntl(pipefd[0], F_GETFD), -1, "the producer closed the program's pipe");
    cr_assert_neq(fcntl(pipefd[1], F_GETFD), -1, "the producer closed the program's pipe");
    char buf[16];
    cr_assert_eq(read(pipefd[0], buf, sizeof buf), -1,
                 "the producer wrote into the program's pipe");
    cr_assert_eq(errno, EAGAIN);
    close(pipefd[0]);
    close(pipefd[1]);
    sb_stop(sb);
}

/* The program closes the epoll set and makes an epoll set of its own, which takes the number,
 * with a ready descriptor registered under data it chose: the sender must not take those
 * events for its own (it used to read data.ptr as a connection), must not close the program's
 * set, and must deliver again with a set of its own. */
Test(producer_fd_faults, epoll_set_replaced_by_the_programs_own, .timeout = 120)
{
    skip_under_tsan();
    sb_broker_t *sb = sb_start(TOPIC, 1, NULL, NULL);
    kp_producer_t *p = producer_test_new(sb->bootstrap, NULL);
    deliver_one(p, 1);
    int old = p->epfd;
    cr_assert_eq(close(old), 0);
    int theirs = epoll_create1(EPOLL_CLOEXEC);
    cr_assert_eq(theirs, old, "the program's epoll set did not take the freed number");
    int pipefd[2];
    cr_assert_eq(pipe2(pipefd, O_NONBLOCK | O_CLOEXEC), 0);
    cr_assert_eq(write(pipefd[1], "x", 1), 1); /* always readable: level-triggered events */
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = 0x0123456789abcdefULL};
    cr_assert_eq(epoll_ctl(theirs, EPOLL_CTL_ADD, pipefd[0], &ev), 0);
    deliver_one(p, 2);
    expect_sender_idle("the program made its own epoll set under the producer's number");
    deliver_one(p, 3);
    cr_assert_eq(kp_close(p, 5000), KP_OK);
    cr_assert_neq(fcntl(theirs, F_GETFD), -1, "the producer closed the program's epoll set");
    struct epoll_event got;
    cr_assert_eq(epoll_wait(theirs, &got, 1, 0), 1, "the program's set lost its registration");
    cr_assert_eq(got.data.u64, 0x0123456789abcdefULL);
    close(theirs);
    close(pipefd[0]);
    close(pipefd[1]);
    sb_stop(sb);
}
