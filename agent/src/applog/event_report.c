/*
 * event_report.c - the agent's Start and Shutdown events (skywalking.v3.Event), shaped as the
 * Java agent's EventReportServiceClient sends them: a random uuid, source {service,
 * serviceInstance}, name "Start" / "Shutdown", type Normal, a one-line message, for Start the
 * parameter OPTS (there the JVM options; here the agent settings that differ from the
 * defaults), startTime / endTime in ms, layer GENERAL. Written with the reverse protobuf
 * writer (encode/pb_reverse.h): fields in descending order.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "../config/config.h"
#include "../segment/clock.h"
#include "../util/utf8.h"
#include "../encode/pb_reverse.h"
#include "log_report.h"

#define OPTS_MAX 4096

/* Event field numbers (event/Event.proto). */
enum {
    EV_UUID = 1,
    EV_SOURCE = 2,
    EV_NAME = 3,
    EV_MESSAGE = 5,
    EV_PARAMETERS = 6,
    EV_START = 7,
    EV_END = 8,
    EV_LAYER = 9,
    SRC_SERVICE = 1,
    SRC_INSTANCE = 2,
    MAP_KEY = 1,
    MAP_VALUE = 2,
};

/* A version 4 uuid ("xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx") from getrandom, falling back on
   the clock and the pid when the kernel has no entropy to give without blocking. */
static void uuid_v4(char out[37])
{
    uint8_t b[16];
    if (getrandom(b, sizeof b, GRND_NONBLOCK) != (ssize_t)sizeof b) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        uint64_t x = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30) ^ (uint64_t)getpid();
        for (size_t i = 0; i < sizeof b; i++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            b[i] = (uint8_t)x;
        }
    }
    b[6] = (uint8_t)((b[6] & 0x0f) | 0x40);
    b[8] = (uint8_t)((b[8] & 0x3f) | 0x80);
    snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
             b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
             b[14], b[15]);
}

int64_t sw__process_start_ms(void)
{
    /* Field 22 of /proc/self/stat: start time in clock ticks after boot; the comm field
       (2) may hold spaces and parentheses, so parsing starts after its last ')'. */
    char stat[1024];
    FILE *f = fopen("/proc/self/stat", "re");
    size_t n = f != NULL ? fread(stat, 1, sizeof stat - 1, f) : 0;
    if (f != NULL) {
        fclose(f);
    }
    stat[n] = '\0';
    const char *p = strrchr(stat, ')');
    unsigned long long ticks = 0;
    int field = 2;
    for (; p != NULL && *p != '\0' && field < 22; p++) {
        if (*p == ' ') {
            field++;
        }
    }
    long hz = sysconf(_SC_CLK_TCK);
    struct timespec boot_rel, real;
    if (p == NULL || field != 22 || sscanf(p, "%llu", &ticks) != 1 || hz <= 0 ||
        clock_gettime(CLOCK_BOOTTIME, &boot_rel) != 0 || clock_gettime(CLOCK_REALTIME, &real)) {
        return sw__now_ms();
    }
    int64_t now_ms = (int64_t)real.tv_sec * 1000 + real.tv_nsec / 1000000;
    int64_t since_boot_ms = (int64_t)boot_rel.tv_sec * 1000 + boot_rel.tv_nsec / 1000000;
    int64_t started_ms = (int64_t)(ticks * 1000 / (unsigned long long)hz);
    int64_t t = now_ms - (since_boot_ms - started_ms);
    return t > 0 && t <= now_ms ? t : now_ms;
}

sw__log_item_t *sw__event_item_new(const sw_config_t *cfg, bool start, int64_t start_ms,
                                   int64_t end_ms)
{
    char uuid[37];
    uuid_v4(uuid);
    char opts[OPTS_MAX] = "";
    if (start) {
        (void)sw__config_describe(cfg, opts, sizeof opts);
        /* Settings may hold any bytes (paths, names): valid UTF-8 for the message. */
        sw__utf8_fix(opts, strlen(opts));
    }
    const char *name = start ? "Start" : "Shutdown";
    const char *message = start ? "Start C/C++ application" : "Shutting down C/C++ application";
    size_t bound = 128 + strlen(uuid) + strlen(name) + strlen(message) + strlen(opts) +
                   strlen(cfg->service_name) + strlen(cfg->instance_name);
    sw__log_item_t *it = malloc(sizeof *it + bound);
    if (it == NULL) {
        return NULL;
    }
    uint8_t *buf = (uint8_t *)(it + 1);
    sw__pbr_t w = {.start = buf, .p = buf + bound, .overflow = false};
    sw__pbr_string(&w, EV_LAYER, "GENERAL");
    sw__pbr_int64(&w, EV_END, end_ms);
    sw__pbr_int64(&w, EV_START, start_ms);
    if (start) { /* map<string, string>: one entry message {key = 1, value = 2} */
        uint8_t *entry = sw__pbr_mark(&w);
        sw__pbr_string(&w, MAP_VALUE, opts);
        sw__pbr_string(&w, MAP_KEY, "OPTS");
        sw__pbr_close(&w, EV_PARAMETERS, entry);
    }
    sw__pbr_string(&w, EV_MESSAGE, message);
    /* type Normal (0) is the default and not written */
    sw__pbr_string(&w, EV_NAME, name);
    uint8_t *source = sw__pbr_mark(&w);
    sw__pbr_string(&w, SRC_INSTANCE, cfg->instance_name);
    sw__pbr_string(&w, SRC_SERVICE, cfg->service_name);
    sw__pbr_close(&w, EV_SOURCE, source);
    sw__pbr_string(&w, EV_UUID, uuid);
    return sw__log_item_finish(it, &w, buf + bound, SW__LOG_ITEM_EVENT);
}
