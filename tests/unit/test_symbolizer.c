/*
 * test_symbolizer.c - code addresses to frame strings (agent/src/symbol/symbolizer.h):
 *
 *   - a static function of this program (only in .symtab, not in dladdr's dynamic symbols) is
 *     named with its source file and line, from this process and as a module offset;
 *   - a libc function is named; a C++ symbol of libstdc++ comes out demangled;
 *   - unknown frames read "module+0xoffset" or "0x..."; output is cut to cap and NUL-terminated;
 *   - the memory budget holds: with room for one module the other is closed, with room for none
 *     every lookup still answers;
 *   - threads symbolizing at once get the same answers (run under TSan too).
 */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "skywalking.h"
#include "symbol/symbolizer.h"

/* Only in .symtab: static, not inlined, not exported. Its lines are asserted on. */
static const int target_line = __LINE__ + 1;
__attribute__((noinline)) static int static_target(int x)
{
    return x * 3 + 1;
}

static void assert_static_target(const char *frame)
{
    cr_assert(strncmp(frame, "static_target (test_symbolizer.c:", 33) == 0, "frame \"%s\"", frame);
    int line = atoi(frame + 33);
    int decl = target_line;
    cr_assert(line >= decl && line <= decl + 3, "frame \"%s\": line not in %d..%d", frame, decl,
              decl + 3);
}

Test(symbolizer, static_function_with_file_and_line)
{
    sw__symbolizer_t *s = NULL;
    cr_assert_eq(sw__symbolizer_create(16u << 20, &s), 0);
    Dl_info dl;
    cr_assert_eq(dladdr((void *)static_target, &dl) != 0 && dl.dli_sname != NULL &&
                     strcmp(dl.dli_sname, "static_target") == 0,
                 0, "dladdr alone names static_target: the test proves nothing");
    char out[256];
    size_t n = sw__symbolizer_addr(s, (uintptr_t)static_target + 1, out, sizeof out);
    cr_assert_eq(n, strlen(out));
    assert_static_target(out);
    /* Again, from the frame cache. */
    char again[256];
    sw__symbolizer_addr(s, (uintptr_t)static_target + 1, again, sizeof again);
    cr_assert_str_eq(again, out);
    cr_assert_eq(static_target(2), 7);
    sw__symbolizer_destroy(s);
}

Test(symbolizer, module_offset_of_another_process)
{
    sw__symbolizer_t *s = NULL;
    cr_assert_eq(sw__symbolizer_create(16u << 20, &s), 0);
    Dl_info dl;
    struct link_map *lm = NULL;
    cr_assert(dladdr1((void *)static_target, &dl, (void **)&lm, RTLD_DL_LINKMAP) != 0);
    char exe[4096];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    cr_assert(len > 0);
    exe[len] = '\0';
    char out[256];
    sw__symbolizer_module_offset(s, exe, (uintptr_t)static_target + 1 - lm->l_addr, out,
                                 sizeof out);
    assert_static_target(out);
    sw__symbolizer_destroy(s);
}

Test(symbolizer, libc_function)
{
    sw__symbolizer_t *s = NULL;
    cr_assert_eq(sw__symbolizer_create(16u << 20, &s), 0);
    void *fn = dlsym(RTLD_DEFAULT, "getpid");
    cr_assert_not_null(fn);
    char out[256];
    sw__symbolizer_addr(s, (uintptr_t)fn, out, sizeof out);
    /* "getpid (libc.so.6)", or "getpid (getpid.c:29)" with libc's debug file installed. */
    cr_assert(strncmp(out, "getpid (", 8) == 0 || strncmp(out, "__getpid (", 10) == 0,
              "frame \"%s\"", out);
    sw__symbolizer_destroy(s);
}

Test(symbolizer, cxx_names_demangled)
{
    void *h = dlopen("libstdc++.so.6", RTLD_NOW | RTLD_GLOBAL);
    cr_assert_not_null(h, "libstdc++.so.6: %s", dlerror());
    void *fn = dlsym(h, "_ZNKSt9exception4whatEv"); /* std::exception::what() const */
    cr_assert_not_null(fn);
    sw__symbolizer_t *s = NULL;
    cr_assert_eq(sw__symbolizer_create(16u << 20, &s), 0);
    char out[256];
    sw__symbolizer_addr(s, (uintptr_t)fn, out, sizeof out);
    cr_assert(strncmp(out, "std::exception::what() const (", 30) == 0, "frame \"%s\"", out);
    sw__symbolizer_destroy(s);
    dlclose(h);
}

Test(symbolizer, unknown_frames_and_truncation)
{
    sw__symbolizer_t *s = NULL;
    cr_assert_eq(sw__symbolizer_create(SW__SYMBOLIZER_MIN_BYTES, &s), 0);
    char out[256];
    sw__symbolizer_module_offset(s, "/nonexistent/dir/libgone.so.1", 0x1a2b, out, sizeof out);
    cr_assert_str_eq(out, "libgone.so.1+0x1a2b");
    sw__symbolizer_addr(s, 0x10, out, sizeof out);
    cr_assert_str_eq(out, "0x10");
    /* A file that is no ELF: module and offset. */
    sw__symbolizer_module_offset(s, "/etc/hostname", 0x40, out, sizeof out);
    cr_assert_str_eq(out, "hostname+0x40");
    char small[8];
    memset(small, 'x', sizeof small);
    size_t n =
        sw__symbolizer_module_offset(s, "/nonexistent/libgone.so", 0x1a2b, small, sizeof small);
    cr_assert_eq(n, 7);
    cr_assert_str_eq(small, "libgone");
    cr_assert_eq(sw__symbolizer_addr(s, 0x10, small, 0), 0);
    n = sw__symbolizer_addr(s, (uintptr_t)static_target, small, sizeof small);
    cr_assert_eq(n, 7);
    cr_assert_str_eq(small, "static_");
    cr_assert_eq(sw__symbolizer_create(SW__SYMBOLIZER_MIN_BYTES - 1, &s), SW_EINVAL);
    cr_assert_eq(sw__symbolizer_create(1u << 20, NULL), SW_EINVAL);
    sw__symbolizer_destroy(s);
    sw__symbolizer_destroy(NULL);
}

static size_t file_size(const char *path)
{
    struct stat st;
    cr_assert_eq(stat(path, &st), 0, "%s", path);
    return (size_t)st.st_size;
}

Test(symbolizer, budget_holds)
{
    char exe[4096];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    cr_assert(len > 0);
    exe[len] = '\0';
    Dl_info dl;
    void *fn = dlsym(RTLD_DEFAULT, "getpid");
    cr_assert(dladdr(fn, &dl) != 0 && dl.dli_fname != NULL);
    size_t exe_size = file_size(exe);
    size_t libc_size = file_size(dl.dli_fname);
    size_t big = exe_size > libc_size ? exe_size : libc_size;

    /* Room for one module (and the frame cache) but not both. */
    size_t max = big + (big + exe_size + libc_size) / 4 + (1u << 20);
    if (max >= exe_size + libc_size) {
        max = exe_size + libc_size - 1;
    }
    max = max < big + (256u << 10) ? big + (256u << 10) : max;
    sw__symbolizer_t *s = NULL;
    cr_assert_eq(sw__symbolizer_create(max, &s), 0);
    char out[256];
    for (int i = 0; i < 3; i++) {
        sw__symbolizer_addr(s, (uintptr_t)static_target + 1 + (uintptr_t)i, out, sizeof out);
        assert_static_target(out);
        sw__symbolizer_addr(s, (uintptr_t)fn + (uintptr_t)i, out, sizeof out);
        cr_assert(strstr(out, "getpid") != NULL, "frame \"%s\"", out);
        cr_assert_leq(sw__symbolizer_bytes(s), max);
        cr_assert_leq(sw__symbolizer_modules(s), 1);
    }
    sw__symbolizer_destroy(s);

    /* Room for no module: every lookup opens and closes, and still answers. */
    cr_assert_eq(sw__symbolizer_create(SW__SYMBOLIZER_MIN_BYTES, &s), 0);
    sw__symbolizer_addr(s, (uintptr_t)static_target + 1, out, sizeof out);
    assert_static_target(out);
    cr_assert_eq(sw__symbolizer_modules(s), 0);
    cr_assert_leq(sw__symbolizer_bytes(s), SW__SYMBOLIZER_MIN_BYTES);
    sw__symbolizer_destroy(s);
}

static sw__symbolizer_t *shared;

static void *symbolize_loop(void *arg)
{
    (void)arg;
    char out[256];
    for (int i = 0; i < 2000; i++) {
        sw__symbolizer_addr(shared, (uintptr_t)static_target + 1 + (uintptr_t)(i % 4), out,
                            sizeof out);
        if (strncmp(out, "static_target (", 15) != 0) {
            return (void *)1;
        }
    }
    return NULL;
}

Test(symbolizer, threads_at_once)
{
    cr_assert_eq(sw__symbolizer_create(16u << 20, &shared), 0);
    pthread_t t[4];
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(pthread_create(&t[i], NULL, symbolize_loop, NULL), 0);
    }
    for (int i = 0; i < 4; i++) {
        void *r = NULL;
        pthread_join(t[i], &r);
        cr_assert_null(r, "thread %d saw a wrong frame", i);
    }
    sw__symbolizer_destroy(shared);
}
