/*
 * address_space_limit.h - makes the next large allocation of a test process fail for real:
 * RLIMIT_AS (which binds every user, root included) is set to what the process maps now plus
 * a headroom. glibc serves allocations of 128 KiB and more, and thread stacks, with mmap, so
 * those fail once the headroom is used up, while small allocations still come from the heap
 * the process already has. This reaches the out-of-memory and could-not-start-a-thread paths
 * of the libraries without a fake allocator.
 *
 * Criterion runs every test in its own process, so the limit ends with the test. The
 * sanitizer runtimes reserve terabytes of shadow memory and need to map more as the test
 * runs, so under ASan or TSan the tests that use this are skipped (address_space_limit_usable).
 */
#ifndef ADDRESS_SPACE_LIMIT_H
#define ADDRESS_SPACE_LIMIT_H

#include <criterion/criterion.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/resource.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define ADDRESS_SPACE_LIMIT_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define ADDRESS_SPACE_LIMIT_SANITIZED 1
#endif
#endif

/* False in sanitizer builds, where RLIMIT_AS would break the runtime rather than the code. */
static inline bool address_space_limit_usable(void)
{
#ifdef ADDRESS_SPACE_LIMIT_SANITIZED
    return false;
#else
    return true;
#endif
}

/* Caps the address space at its current size plus `headroom` bytes. Fails the test when the
 * size cannot be read or the limit cannot be set. */
static inline void address_space_limit(size_t headroom)
{
    FILE *f = fopen("/proc/self/statm", "r");
    cr_assert_not_null(f, "cannot open /proc/self/statm");
    unsigned long pages = 0;
    int n = fscanf(f, "%lu", &pages);
    fclose(f);
    cr_assert_eq(n, 1, "cannot read /proc/self/statm");
    rlim_t now = (rlim_t)pages * (rlim_t)sysconf(_SC_PAGESIZE);
    struct rlimit rl = {now + headroom, now + headroom};
    cr_assert_eq(setrlimit(RLIMIT_AS, &rl), 0, "setrlimit(RLIMIT_AS) failed");
}

#endif /* ADDRESS_SPACE_LIMIT_H */
