/*
 * fault_proxy.c - the framing-aware fault-injecting TCP proxy for tests (see fault_proxy.h).
 */
#include "fault_proxy.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_ROUTES 8
#define MAX_PAIRS  64

typedef struct chunk {
    struct chunk *next;
    int64_t release_ms;
    size_t len, off;
    uint8_t data[];
} chunk_t;

/* One direction of a connection pair: bytes read from its source, framed, faulted and
 * queued for its destination. */
typedef struct side {
    chunk_t *head, *tail;
    uint8_t hdr[4];
    int hdr_got;
    int64_t frame_len; /* 4 + size of the current frame */
    int64_t pos;       /* bytes of the current frame passed on */
    int64_t cut;       /* position of a reset / truncation in this frame, or -1 */
    bool cut_reset;    /* the cut resets (else it closes normally) */
    int64_t corrupt_at;
    bool closing; /* nothing more is read; close the pair once the queue is written */
    bool reset;   /* close with RST */
} side_t;

typedef struct pair {
    int fd[2];      /* [0] the client, [1] the broker */
    side_t side[2]; /* [FP_TO_BROKER] reads fd[0] and writes fd[1]; [FP_TO_CLIENT] reverse */
} pair_t;

struct fault_proxy {
    int n_routes;
    int listen_fd[MAX_ROUTES];
    int target_port[MAX_ROUTES];
    int stop_fd;
    pthread_t thread;
    pthread_mutex_t lock;
    /* lock: */
    fp_faults_t faults[2];
    fp_stats_t stats;
    uint64_t rng;
    /* proxy thread only: */
    pair_t *pairs[MAX_PAIRS];
    int n_pairs;
};

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* xorshift64*; caller holds lock. */
static uint64_t next_rand(fault_proxy_t *fp)
{
    fp->rng ^= fp->rng >> 12;
    fp->rng ^= fp->rng << 25;
    fp->rng ^= fp->rng >> 27;
    return fp->rng * 0x2545F4914F6CDD1DULL;
}

static double rand01(fault_proxy_t *fp)
{
    return (double)(next_rand(fp) >> 11) / 9007199254740992.0;
}

static void set_nonblocking(int fd)
{
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

static void pair_free(pair_t *pr, bool reset)
{
    for (int i = 0; i < 2; i++) {
        if (reset) {
            struct linger l = {1, 0};
            setsockopt(pr->fd[i], SOL_SOCKET, SO_LINGER, &l, sizeof(l));
        }
        close(pr->fd[i]);
        for (chunk_t *c = pr->side[i].head, *n; c; c = n) {
            n = c->next;
            free(c);
        }
    }
    free(pr);
}

/* Decides the faults of a frame whose header just completed. Caller holds lock. */
static void frame_begin(fault_proxy_t *fp, side_t *s, int d)
{
    uint32_t size = (uint32_t)s->hdr[0] << 24 | (uint32_t)s->hdr[1] << 16 |
                    (uint32_t)s->hdr[2] << 8 | s->hdr[3];
    const fp_faults_t *f = &fp->faults[d];
    s->frame_len = 4 + (int64_t)size;
    s->pos = 0;
    s->cut = -1;
    s->corrupt_at = -1;
    fp->stats.frames[d]++;
    if (f->reset_p > 0 && rand01(fp) < f->reset_p) {
        s->cut = (int64_t)(next_rand(fp) % (uint64_t)s->frame_len);
        s->cut_reset = true;
    } else if (f->truncate_p > 0 && rand01(fp) < f->truncate_p) {
        s->cut = (int64_t)(next_rand(fp) % (uint64_t)s->frame_len);
        s->cut_reset = false;
    }
    if (size > 0 && f->corrupt_p > 0 && rand01(fp) < f->corrupt_p) {
        s->corrupt_at = 4 + (int64_t)(next_rand(fp) % size);
    }
}

/* Passes one byte of the current frame on into out; returns false at a cut. */
static bool frame_byte(fault_proxy_t *fp, side_t *s, int d, uint8_t byte, uint8_t *out, size_t *n)
{
    if (s->pos == s->cut) {
        s->closing = true;
        s->reset = s->cut_reset;
        if (s->cut_reset) {
            fp->stats.resets[d]++;
        } else {
            fp->stats.truncations[d]++;
        }
        return false;
    }
    if (s->pos == s->corrupt_at) {
        byte ^= (uint8_t)(1 + next_rand(fp) % 255);
        fp->stats.corruptions[d]++;
    }
    out[(*n)++] = byte;
    if (++s->pos == s->frame_len) {
        s->hdr_got = 0;
    }
    return true;
}

/* Frames and faults bytes read from side d's source and queues them. */
static void side_input(fault_proxy_t *fp, side_t *s, int d, const uint8_t *in, size_t len)
{
    chunk_t *c = malloc(sizeof(*c) + len + 4);
    if (!c) {
        return;
    }
    size_t n = 0;
    pthread_mutex_lock(&fp->lock);
    int64_t latency = fp->faults[d].latency_ms;
    for (size_t i = 0; i < len && !s->closing; i++) {
        if (s->hdr_got < 4) {
            s->hdr[s->hdr_got++] = in[i];
            if (s->hdr_got < 4) {
                continue;
            }
            frame_begin(fp, s, d);
            for (int k = 0; k < 4 && frame_byte(fp, s, d, s->hdr[k], c->data, &n); k++)
                ;
            continue;
        }
        frame_byte(fp, s, d, in[i], c->data, &n);
    }
    pthread_mutex_unlock(&fp->lock);
    if (n == 0) {
        free(c);
        return;
    }
    c->next = NULL;
    c->len = n;
    c->off = 0;
    c->release_ms = mono_ms() + latency;
    if (s->tail) {
        s->tail->next = c;
    } else {
        s->head = c;
    }
    s->tail = c;
}

/* Writes what side d may write now. Returns false on a write error. */
static bool side_output(fault_proxy_t *fp, side_t *s, int d, int fd, int64_t now)
{
    pthread_mutex_lock(&fp->lock);
    bool held = fp->faults[d].blackhole;
    pthread_mutex_unlock(&fp->lock);
    while (!held && s->head && s->head->release_ms <= now) {
        chunk_t *c = s->head;
        ssize_t w = send(fd, c->data + c->off, c->len - c->off, MSG_NOSIGNAL);
        if (w < 0 && (errno == EAGAIN || errno == EINTR)) {
            return true;
        }
        if (w < 0) {
            return false;
        }
        c->off += (size_t)w;
        if (c->off < c->len) {
            return true;
        }
        s->head = c->next;
        if (!s->head) {
            s->tail = NULL;
        }
        free(c);
    }
    return true;
}

/* Reads from side d's source; returns false on EOF or error (the side is then closing). */
static void side_read(fault_proxy_t *fp, side_t *s, int d, int fd)
{
    uint8_t buf[65536];
    ssize_t r = recv(fd, buf, sizeof(buf), 0);
    if (r > 0) {
        side_input(fp, s, d, buf, (size_t)r);
    } else if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
        s->closing = true;
        s->reset = r < 0;
    }
}

static void accept_on(fault_proxy_t *fp, int route)
{
    int cfd = accept(fp->listen_fd[route], NULL, NULL);
    if (cfd < 0) {
        return;
    }
    int sfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)fp->target_port[route]),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    pair_t *pr = fp->n_pairs < MAX_PAIRS ? calloc(1, sizeof(*pr)) : NULL;
    if (sfd < 0 || !pr || connect(sfd, (struct sockaddr *)&a, sizeof(a)) != 0) {
        close(cfd);
        if (sfd >= 0) {
            close(sfd);
        }
        free(pr);
        return;
    }
    set_nonblocking(cfd);
    set_nonblocking(sfd);
    pr->fd[0] = cfd;
    pr->fd[1] = sfd;
    fp->pairs[fp->n_pairs++] = pr;
    pthread_mutex_lock(&fp->lock);
    fp->stats.connections++;
    pthread_mutex_unlock(&fp->lock);
}

static void *run(void *arg)
{
    fault_proxy_t *fp = arg;
    for (;;) {
        struct pollfd pf[1 + MAX_ROUTES + 2 * MAX_PAIRS];
        int n = 0;
        pf[n++] = (struct pollfd){.fd = fp->stop_fd, .events = POLLIN};
        for (int i = 0; i < fp->n_routes; i++) {
            pf[n++] = (struct pollfd){.fd = fp->listen_fd[i], .events = POLLIN};
        }
        int64_t now = mono_ms();
        for (int i = 0; i < fp->n_pairs; i++) {
            pair_t *pr = fp->pairs[i];
            for (int e = 0; e < 2; e++) {
                /* fd[e] is side e's source and side (1-e)'s destination. */
                short ev = pr->side[e].closing ? 0 : POLLIN;
                if (pr->side[1 - e].head && pr->side[1 - e].head->release_ms <= now) {
                    ev |= POLLOUT;
                }
                pf[n++] = (struct pollfd){.fd = pr->fd[e], .events = ev};
            }
        }
        if (poll(pf, (nfds_t)n, 5) < 0 && errno != EINTR) {
            break;
        }
        if (pf[0].revents) {
            break;
        }
        int n_pairs = fp->n_pairs; /* the pairs polled; those accepted below wait a round */
        for (int i = 0; i < fp->n_routes; i++) {
            if (pf[1 + i].revents & POLLIN) {
                accept_on(fp, i);
            }
        }
        now = mono_ms();
        int base = 1 + fp->n_routes, k = 0;
        for (int i = 0; i < n_pairs; i++) {
            pair_t *pr = fp->pairs[i];
            bool ok = true;
            for (int e = 0; e < 2; e++) {
                short re = pf[base + 2 * i + e].revents;
                if (re & (POLLIN | POLLHUP | POLLERR)) {
                    side_read(fp, &pr->side[e], e, pr->fd[e]);
                }
            }
            for (int d = 0; d < 2 && ok; d++) {
                ok = side_output(fp, &pr->side[d], d, pr->fd[1 - d], now);
            }
            bool done = !ok;
            bool reset = !ok;
            for (int d = 0; d < 2; d++) {
                if (pr->side[d].closing && !pr->side[d].head) {
                    done = true;
                    reset = reset || pr->side[d].reset;
                }
            }
            if (done) {
                pair_free(pr, reset);
            } else {
                fp->pairs[k++] = pr;
            }
        }
        for (int i = n_pairs; i < fp->n_pairs; i++) {
            fp->pairs[k++] = fp->pairs[i];
        }
        fp->n_pairs = k;
    }
    for (int i = 0; i < fp->n_pairs; i++) {
        pair_free(fp->pairs[i], false);
    }
    fp->n_pairs = 0;
    return NULL;
}

fault_proxy_t *fp_start(const int *listen_ports, const int *target_ports, int n, uint64_t seed)
{
    if (n <= 0 || n > MAX_ROUTES) {
        return NULL;
    }
    fault_proxy_t *fp = calloc(1, sizeof(*fp));
    if (!fp) {
        return NULL;
    }
    fp->rng = seed ? seed : 0x9E3779B97F4A7C15ULL;
    pthread_mutex_init(&fp->lock, NULL);
    for (int i = 0; i < n; i++) {
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        struct sockaddr_in a = {.sin_family = AF_INET,
                                .sin_port = htons((uint16_t)listen_ports[i]),
                                .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(fd, 16) != 0) {
            fprintf(stderr, "fault_proxy: cannot listen on 127.0.0.1:%d: %s\n", listen_ports[i],
                    strerror(errno));
            if (fd >= 0) {
                close(fd);
            }
            for (int k = 0; k < fp->n_routes; k++) {
                close(fp->listen_fd[k]);
            }
            free(fp);
            return NULL;
        }
        fp->listen_fd[i] = fd;
        fp->target_port[i] = target_ports[i];
        fp->n_routes++;
    }
    fp->stop_fd = eventfd(0, EFD_CLOEXEC);
    pthread_create(&fp->thread, NULL, run, fp);
    return fp;
}

fault_proxy_t *fp_start_for_cluster(const char *dir, uint64_t seed)
{
    char path[600];
    snprintf(path, sizeof(path), "%s/proxy_map", dir);
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "fault_proxy: cannot read %s: %s\n", path, strerror(errno));
        return NULL;
    }
    int listen_ports[MAX_ROUTES], target_ports[MAX_ROUTES], n = 0;
    while (n < MAX_ROUTES && fscanf(f, "%d %d", &listen_ports[n], &target_ports[n]) == 2) {
        n++;
    }
    fclose(f);
    return fp_start(listen_ports, target_ports, n, seed);
}

void fp_set(fault_proxy_t *fp, int direction, const fp_faults_t *faults)
{
    pthread_mutex_lock(&fp->lock);
    fp->faults[direction] = *faults;
    pthread_mutex_unlock(&fp->lock);
}

void fp_stats(fault_proxy_t *fp, fp_stats_t *out)
{
    pthread_mutex_lock(&fp->lock);
    *out = fp->stats;
    pthread_mutex_unlock(&fp->lock);
}

void fp_stop(fault_proxy_t *fp)
{
    uint64_t one = 1;
    if (write(fp->stop_fd, &one, sizeof(one)) != (ssize_t)sizeof(one)) {
        perror("fault_proxy: stop");
    }
    pthread_join(fp->thread, NULL);
    close(fp->stop_fd);
    for (int i = 0; i < fp->n_routes; i++) {
        close(fp->listen_fd[i]);
    }
    pthread_mutex_destroy(&fp->lock);
    free(fp);
}
