/*
 * Lets criterion run under ThreadSanitizer (linked into criterion tests of the tsan preset only).
 *
 * Criterion's BoxFort maps its "inheritable arena" with mmap(MAP_SHARED | MAP_FIXED) at a
 * random address between 0x200000000000 and 0x7f0000000000, after probing with mincore()
 * that the pages there are free. Under TSan most of that range is reserved by the runtime, so
 * the probe fails a few times and criterion aborts with "Could not initialize inheritable
 * arena". Two interpositions fix that, for test binaries of the tsan preset only:
 *  - mincore() reports memory outside TSan's application ranges as free (ENOMEM), so the
 *    probe succeeds; inside them it asks the kernel. Only BoxFort calls mincore here.
 *  - mmap() recognises BoxFort's arena request (shared, fixed, file-backed, outside TSan's
 *    application ranges) and turns it into a hint inside the range TSan gives to modules
 *    (0x7e8000000000..0x7f0000000000 on x86_64), which BoxFort's own bounds check accepts.
 *    Every other call goes unchanged to TSan's interceptor, then libc.
 * This file must be compiled without -fsanitize=thread: it runs before the runtime is ready.
 */
#include <stddef.h>
#include <errno.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/types.h>

static int is_tsan_app_memory(uintptr_t begin, size_t length)
{
    static const uintptr_t ranges[][2] = {
        {0x000000001000ULL, 0x008000000000ULL}, /* low: main binary, MAP_32BIT */
        {0x550000000000ULL, 0x568000000000ULL}, /* PIE binaries */
        {0x7b0000000000ULL, 0x7c0000000000ULL}, /* heap */
        {0x7e8000000000ULL, 0x800000000000ULL}, /* modules, mmap(NULL), main stack */
    };
    for (size_t i = 0; i < sizeof ranges / sizeof ranges[0]; i++) {
        if (begin >= ranges[i][0] && begin + length <= ranges[i][1]) {
            return 1;
        }
    }
    return 0;
}

/* TSan's own mmap64 (its interceptor, which then calls libc's); called directly, not through
 * dlsym, because mmap runs before the sanitizer runtime can serve dlsym's allocations. */
void *__interceptor_mmap64(void *addr, size_t length, int prot, int flags, int fd, off_t offset);

void *mmap64(void *addr, size_t length, int prot, int flags, int fd, off_t offset);
void *mmap64(void *addr, size_t length, int prot, int flags, int fd, off_t offset)
{
    int boxfort_arena = (flags & MAP_FIXED) && (flags & MAP_SHARED) && fd >= 0 && addr != NULL &&
                        !is_tsan_app_memory((uintptr_t)addr, length);
    if (boxfort_arena) {
        /* Keep BoxFort's 16 MiB granularity; spread by the requested address. */
        uintptr_t slot = ((uintptr_t)addr >> 24) & 0x3fff;
        void *hint = (void *)(0x7e9000000000ULL + (slot << 24));
        return __interceptor_mmap64(hint, length, prot, flags & ~MAP_FIXED, fd, offset);
    }
    return __interceptor_mmap64(addr, length, prot, flags, fd, offset);
}

void *mmap(void *addr, size_t length, int prot, int flags, int fd, off_t offset)
{
    return mmap64(addr, length, prot, flags, fd, offset);
}

int mincore(void *addr, size_t length, unsigned char *vec);
int mincore(void *addr, size_t length, unsigned char *vec)
{
    if (!is_tsan_app_memory((uintptr_t)addr, length)) {
        errno = ENOMEM;
        return -1;
    }
    return (int)syscall(SYS_mincore, addr, length, vec);
}
