/*
 * pl_cyg - a program built with -finstrument-functions (and -rdynamic, so that dladdr names its
 * functions) and linked with libskywalking: its function calls become local spans. The span
 * tree it can produce, with no filter:
 *
 *   cyg_outer                 >= 500 ms
 *     cyg_middle_a            >= 250 ms (a sleep: load only makes it longer)
 *     cyg_middle_b            >= 250 ms
 *       cyg_tiny x 100        an addition each
 *     skip_me
 *       cyg_tiny
 *
 * `pl_cyg threads` runs cyg_outer on 4 threads at once instead (one segment each).
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "skywalking.h"

#define NOINLINE __attribute__((noinline))

static _Thread_local volatile int sink; /* per thread: the threads mode must not race */

__attribute__((no_instrument_function)) static void pause_ms(long ms)
{
    struct timespec ts = {0, ms * 1000000L};
    nanosleep(&ts, NULL); /* the workload: a function that takes a while */
}

NOINLINE void cyg_tiny(int i)
{
    sink += i;
}

NOINLINE void cyg_middle_a(void)
{
    pause_ms(250);
}

NOINLINE void cyg_middle_b(void)
{
    for (int i = 0; i < 100; i++) {
        cyg_tiny(i);
    }
    pause_ms(250);
}

NOINLINE void skip_me(void)
{
    cyg_tiny(-1);
}

NOINLINE void cyg_outer(void)
{
    cyg_middle_a();
    cyg_middle_b();
    skip_me();
}

__attribute__((no_instrument_function)) static void *thread_main(void *arg)
{
    (void)arg;
    cyg_outer();
    return NULL;
}

int main(int argc, char **argv)
{
    if (sw_init(NULL) != 0) {
        return 1;
    }
    if (argc > 1 && strcmp(argv[1], "threads") == 0) {
        pthread_t t[4];
        for (int i = 0; i < 4; i++) {
            if (pthread_create(&t[i], NULL, thread_main, NULL) != 0) {
                return 1;
            }
        }
        for (int i = 0; i < 4; i++) {
            pthread_join(t[i], NULL);
        }
    } else {
        cyg_outer();
    }
    sw_stats_t st;
    sw_shutdown();
    sw_stats(&st);
    printf("segments_reported=%llu\n", (unsigned long long)st.segments_reported);
    return 0;
}
