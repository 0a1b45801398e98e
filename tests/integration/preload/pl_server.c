/*
 * pl_server - an ordinary libmicrohttpd + libcurl program for the LD_PRELOAD tests. It knows
 * nothing of skywalking; the tests preload libskywalking-preload.so into it.
 *
 *   pl_server serve PORTFILE    serve until stdin reaches EOF; the port goes to PORTFILE
 *   pl_server threads N         serve, and GET /spawn/N once: the handler starts N threads
 *                               that each GET /leaf
 *   pl_server fork N            serve, and GET /fork N times: the handler forks a child that
 *                               GETs /leaf and exits
 *   pl_server multi N           serve, and GET /multi/N once: the handler runs N transfers at
 *                               once on its thread with libcurl's multi interface (/leaf,
 *                               the last one /fail)
 *
 * Paths: /leaf (200), /fail (503), /needs-header (200 if the request has "X-Test: 1", else
 * 412), /w3c-only (200 if the request has a traceparent and no sw8, else 412), /spawn/N, /fork.
 * Every wait is bounded; a failure prints why and exits non-zero.
 */
#include <curl/curl.h>
#include <microhttpd.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define WAIT_MS 20000

static uint16_t port;

static size_t body_discard(char *data, size_t size, size_t n, void *user)
{
    (void)data, (void)user;
    return size * n;
}

static long get(const char *path)
{
    char url[256];
    snprintf(url, sizeof url, "http://127.0.0.1:%u%s", port, path);
    CURL *h = curl_easy_init();
    if (h == NULL) {
        return -1;
    }
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)WAIT_MS);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, body_discard);
    long status = -1;
    if (curl_easy_perform(h) == CURLE_OK) {
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    }
    curl_easy_cleanup(h);
    return status;
}

static void *leaf_thread(void *arg)
{
    long *status = arg;
    *status = get("/leaf");
    return NULL;
}

static unsigned spawn(unsigned n)
{
    pthread_t t[16];
    long status[16];
    if (n > 16) {
        n = 16;
    }
    unsigned ok = 0, started = 0;
    for (; started < n; started++) {
        if (pthread_create(&t[started], NULL, leaf_thread, &status[started]) != 0) {
            break;
        }
    }
    for (unsigned i = 0; i < started; i++) {
        pthread_join(t[i], NULL);
        ok += status[i] == 200;
    }
    return ok == n ? 200 : 500;
}

/* N transfers in flight at once on this thread (curl_multi_*): /leaf ... /leaf, /fail. Returns
   200 when every /leaf answered 200 and /fail 503. */
static unsigned multi_get(unsigned n)
{
    CURL *h[16];
    CURLM *m = curl_multi_init();
    if (m == NULL || n == 0 || n > 16) {
        return 500;
    }
    char url[256];
    for (unsigned i = 0; i < n; i++) {
        snprintf(url, sizeof url, "http://127.0.0.1:%u%s", port, i + 1 == n ? "/fail" : "/leaf");
        h[i] = curl_easy_init();
        curl_easy_setopt(h[i], CURLOPT_URL, url);
        curl_easy_setopt(h[i], CURLOPT_TIMEOUT_MS, (long)WAIT_MS);
        curl_easy_setopt(h[i], CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(h[i], CURLOPT_WRITEFUNCTION, body_discard);
        curl_multi_add_handle(m, h[i]);
    }
    int running = (int)n;
    unsigned ok = 0, done = 0;
    while (done < n) {
        if (curl_multi_perform(m, &running) != CURLM_OK ||
            curl_multi_poll(m, NULL, 0, 1000, NULL) != CURLM_OK) {
            break;
        }
        CURLMsg *msg;
        int left;
        while ((msg = curl_multi_info_read(m, &left)) != NULL) {
            if (msg->msg != CURLMSG_DONE) {
                continue;
            }
            long status = 0;
            curl_easy_getinfo(msg->easy_handle, CURLINFO_RESPONSE_CODE, &status);
            char *eff = NULL;
            curl_easy_getinfo(msg->easy_handle, CURLINFO_EFFECTIVE_URL, &eff);
            bool fail = eff != NULL && strstr(eff, "/fail") != NULL;
            ok += status == (fail ? 503 : 200);
            done++;
        }
    }
    for (unsigned i = 0; i < n; i++) {
        curl_multi_remove_handle(m, h[i]);
        curl_easy_cleanup(h[i]);
    }
    curl_multi_cleanup(m);
    return ok == n ? 200 : 500;
}

/* Waits for pid at most WAIT_MS; kills it when late. Returns its exit status or -1. */
static int child_wait(pid_t pid)
{
    for (int waited = 0; waited < WAIT_MS; waited++) {
        int st;
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid) {
            return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
        }
        if (r < 0) {
            return -1;
        }
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL); /* polling a child: no event to wait on with a bound */
    }
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    fprintf(stderr, "pl_server: child %d did not exit within %d ms\n", (int)pid, WAIT_MS);
    return -1;
}

static unsigned fork_leaf(void)
{
    pid_t pid = fork();
    if (pid < 0) {
        return 500;
    }
    if (pid == 0) {
        exit(get("/leaf") == 200 ? 0 : 1);
    }
    return child_wait(pid) == 0 ? 200 : 500;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_size, void **state)
{
    (void)cls, (void)method, (void)version, (void)upload;
    static int first;
    if (*state == NULL) { /* headers only: answer on the next call, like most servers */
        *state = &first;
        return MHD_YES;
    }
    if (*upload_size != 0) { /* a chunk of a request body: taken; answered after the last one */
        *upload_size = 0;
        return MHD_YES;
    }
    unsigned status = 404;
    if (strcmp(url, "/leaf") == 0 || strcmp(url, "/upload") == 0) {
        status = 200;
    } else if (strcmp(url, "/fail") == 0) {
        status = 503;
    } else if (strcmp(url, "/needs-header") == 0) {
        const char *v = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Test");
        status = v != NULL && strcmp(v, "1") == 0 ? 200 : 412;
    } else if (strcmp(url, "/w3c-only") == 0) {
        bool w3c = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "traceparent") != NULL;
        bool sw8 = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "sw8") != NULL;
        status = w3c && !sw8 ? 200 : 412;
    } else if (strncmp(url, "/spawn/", 7) == 0) {
        status = spawn((unsigned)atoi(url + 7));
    } else if (strcmp(url, "/fork") == 0) {
        status = fork_leaf();
    } else if (strncmp(url, "/multi/", 7) == 0) {
        status = multi_get((unsigned)atoi(url + 7));
    }
    struct MHD_Response *r =
        MHD_create_response_from_buffer(2, (void *)"ok", MHD_RESPMEM_PERSISTENT);
    enum MHD_Result rc = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: pl_server serve PORTFILE | threads N | fork N | multi N\n");
        return 2;
    }
    /* PL_SERVER_CWD: the working directory to serve from (a relative SW_REPORTER_FILE_PATH
       names a file there); PL_SERVER_EXIT_CWD: the one to move to before exiting. */
    const char *cwd = getenv("PL_SERVER_CWD"), *exit_cwd = getenv("PL_SERVER_EXIT_CWD");
    if (cwd != NULL && chdir(cwd) != 0) {
        perror("pl_server: PL_SERVER_CWD");
        return 1;
    }
    curl_global_init(CURL_GLOBAL_DEFAULT);
    struct MHD_Daemon *d = MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_ERROR_LOG, 0,
        NULL, NULL, handle, NULL, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)30, MHD_OPTION_END);
    if (d == NULL) {
        fprintf(stderr, "pl_server: MHD_start_daemon failed\n");
        return 1;
    }
    port = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT)->port;
    int rc = 0;
    if (strcmp(argv[1], "serve") == 0) {
        char tmp[4096];
        snprintf(tmp, sizeof tmp, "%s.tmp", argv[2]);
        FILE *f = fopen(tmp, "w");
        if (f == NULL || fprintf(f, "%u\n", port) < 0 || fclose(f) != 0 ||
            rename(tmp, argv[2]) != 0) {
            perror("pl_server: port file");
            rc = 1;
        }
        char buf[64];
        while (rc == 0 && read(0, buf, sizeof buf) > 0)
            ; /* serve until the test closes our stdin */
    } else if (strcmp(argv[1], "threads") == 0) {
        char path[32];
        snprintf(path, sizeof path, "/spawn/%d", atoi(argv[2]));
        rc = get(path) == 200 ? 0 : 1;
    } else if (strcmp(argv[1], "multi") == 0) {
        char path[32];
        snprintf(path, sizeof path, "/multi/%d", atoi(argv[2]));
        rc = get(path) == 200 ? 0 : 1;
    } else if (strcmp(argv[1], "fork") == 0) {
        for (int i = 0; i < atoi(argv[2]) && rc == 0; i++) {
            rc = get("/fork") == 200 ? 0 : 1;
        }
    } else {
        rc = 2;
    }
    MHD_stop_daemon(d);
    curl_global_cleanup();
    if (exit_cwd != NULL && chdir(exit_cwd) != 0) {
        perror("pl_server: PL_SERVER_EXIT_CWD");
        return 1;
    }
    return rc;
}
