/*
 * swtrace --crash: reading the crash spools of the agent's crash recorder
 * (agent/src/crash/crash_spool.h) directly, without a collector. Each recorded segment joins
 * the set like a segment file's; its frames (the "@frames" placeholder of the crash log) are
 * written as module+offset, and its root span gets a `crash` tag naming the signal, the
 * process and whether it is the crashing thread's segment.
 */
#include "swtrace.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "crash_spool.h"

#define STACK_MAX 8192

static char *stack_text(const sw__crash_view_t *v)
{
    char *out = malloc(STACK_MAX);
    size_t at = 0;
    if (out == NULL) {
        return NULL;
    }
    out[0] = '\0';
    for (uint32_t i = 0; i < v->frame_count && at + 1 < STACK_MAX; i++) {
        char name[512];
        sw__crash_frame_format(v, &v->frames[i], name, sizeof name);
        int n = snprintf(out + at, STACK_MAX - at, "%s#%u %s", i ? "\n" : "", i, name);
        if (n < 0 || (size_t)n >= STACK_MAX - at) {
            break;
        }
        at += (size_t)n;
    }
    return out;
}

/* Replaces the placeholder in every log of obj and tags its first span. */
static int segment_mark(Skywalking__V3__SegmentObject *obj, const sw__crash_view_t *v,
                        uint32_t flags)
{
    for (size_t s = 0; s < obj->n_spans; s++) {
        Skywalking__V3__SpanObject *sp = obj->spans[s];
        for (size_t l = 0; l < sp->n_logs; l++) {
            for (size_t d = 0; d < sp->logs[l]->n_data; d++) {
                Skywalking__V3__KeyStringValuePair *kv = sp->logs[l]->data[d];
                if (strcmp(kv->key, "stack") == 0 && strcmp(kv->value, "@frames") == 0) {
                    char *text = stack_text(v);
                    if (text == NULL) {
                        return SW__TRACE_ERR_NOMEM;
                    }
                    free(kv->value);
                    kv->value = text;
                }
            }
        }
    }
    if (obj->n_spans == 0) {
        return 0;
    }
    Skywalking__V3__SpanObject *root = obj->spans[0];
    Skywalking__V3__KeyStringValuePair **tags =
        realloc(root->tags, (root->n_tags + 1) * sizeof(*tags));
    Skywalking__V3__KeyStringValuePair *kv = malloc(sizeof *kv);
    char *key = strdup("crash"), *value = malloc(160);
    if (tags != NULL) {
        root->tags = tags;
    }
    if (tags == NULL || kv == NULL || key == NULL || value == NULL) {
        free(kv);
        free(key);
        free(value);
        return SW__TRACE_ERR_NOMEM;
    }
    skywalking__v3__key_string_value_pair__init(kv);
    snprintf(value, 160, "%s in process %u (%s)", sw__crash_signal_name(v->header->signo),
             v->header->pid,
             (flags & SW__CRASH_SEG_CRASHING) ? "the crashing thread" : "another thread");
    kv->key = key;
    kv->value = value;
    tags[root->n_tags++] = kv;
    return 0;
}

/* One spool file: its segments join the set; a line about it goes to `out`. */
static int spool_read(sw__trace_set_t *set, const char *path, FILE *out, char *errbuf,
                      size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        snprintf(errbuf, errlen, "%s: %s", path, strerror(errno));
        return SW__TRACE_ERR_IO;
    }
    size_t cap = 2u * SW__CRASH_SPOOL_BYTES;
    uint8_t *buf = malloc(cap);
    sw__crash_view_t *v = malloc(sizeof *v);
    size_t len = buf != NULL ? fread(buf, 1, cap, f) : 0;
    fclose(f);
    if (buf == NULL || v == NULL) {
        free(buf);
        free(v);
        snprintf(errbuf, errlen, "%s: out of memory", path);
        return SW__TRACE_ERR_NOMEM;
    }
    int rc = sw__crash_spool_parse(buf, len, v);
    if (rc == SW__CRASH_EMPTY) {
        fprintf(out,
                "crash spool %s: no crash recorded (its process is alive, or ended "
                "without sw_shutdown)\n",
                path);
        rc = 0;
    } else if (rc != SW__CRASH_OK) {
        snprintf(errbuf, errlen, "%s: crash spool rejected: %s", path,
                 sw__crash_spool_strerror(rc));
        rc = SW__TRACE_ERR_FOREIGN;
    } else {
        const sw__crash_header_t *h = v->header;
        fprintf(out,
                "crash spool %s: %s at 0x%llx (si_code %d) in process %u thread %u, service "
                "%.*s, instance %.*s, %u segment(s), %u frame(s)\n",
                path, sw__crash_signal_name(h->signo), (unsigned long long)h->fault_addr,
                h->si_code, h->pid, h->tid, (int)h->service_len, h->service, (int)h->instance_len,
                h->instance, h->segment_count, h->frame_count);
        for (uint32_t i = 0; i < v->segment_count && rc == 0; i++) {
            uint8_t framed[10 + 8];
            size_t n = 0;
            uint64_t l = v->segments[i].len;
            do {
                framed[n++] = (uint8_t)((l & 0x7f) | (l >= 0x80 ? 0x80 : 0));
                l >>= 7;
            } while (l != 0);
            uint8_t *rec = malloc(n + v->segments[i].len);
            if (rec == NULL) {
                rc = SW__TRACE_ERR_NOMEM;
                break;
            }
            memcpy(rec, framed, n);
            memcpy(rec + n, v->segments[i].data, v->segments[i].len);
            size_t before = set->n_segs;
            rc = sw__trace_set_read_buffer(set, rec, n + v->segments[i].len, path, errbuf, errlen);
            free(rec);
            for (size_t s = before; rc == 0 && s < set->n_segs; s++) {
                rc = segment_mark(set->segs[s].obj, v, v->segments[i].flags);
            }
        }
    }
    free(buf);
    free(v);
    return rc;
}

int sw__trace_set_read_crash(sw__trace_set_t *set, const char *path, FILE *out, char *errbuf,
                             size_t errlen)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        snprintf(errbuf, errlen, "%s: %s", path, strerror(errno));
        return SW__TRACE_ERR_IO;
    }
    if (!S_ISDIR(st.st_mode)) {
        return spool_read(set, path, out, errbuf, errlen);
    }
    DIR *d = opendir(path);
    if (d == NULL) {
        snprintf(errbuf, errlen, "%s: %s", path, strerror(errno));
        return SW__TRACE_ERR_IO;
    }
    int rc = 0, found = 0;
    size_t slen = strlen(SW__CRASH_SUFFIX);
    for (struct dirent *e; rc == 0 && (e = readdir(d)) != NULL;) {
        size_t n = strlen(e->d_name);
        if (n > slen && strcmp(e->d_name + n - slen, SW__CRASH_SUFFIX) == 0) {
            char file[4096];
            snprintf(file, sizeof file, "%s/%s", path, e->d_name);
            rc = spool_read(set, file, out, errbuf, errlen);
            found++;
        }
    }
    closedir(d);
    if (rc == 0 && found == 0) {
        fprintf(out, "crash directory %s: no spools\n", path);
    }
    return rc;
}
