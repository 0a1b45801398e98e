/*
 * profile_task.h - ProfileTaskQuery commands from the OAP (internal): parsing and refusing.
 *
 * getProfileTaskCommands answers with Commands; each "ProfileTaskQuery" command carries one
 * task as key/value args (SerialNumber, TaskId, EndpointName, Duration in minutes,
 * MinDurationThreshold ms, DumpPeriod ms, MaxSamplingCount, StartTime and CreateTime in ms since
 * the epoch), as the Java agent reads them. A task is refused, with a logged reason naming the
 * argument, when the Java agent would refuse it or when it cannot be meant:
 *
 *   - TaskId or EndpointName missing, empty, or longer than this agent keeps;
 *   - a number that is not a plain decimal integer (garbage, empty, overflowing);
 *   - Duration outside 1..15 minutes; MinDurationThreshold outside 0..3600000 ms;
 *     DumpPeriod below 10 ms or above 60000 ms; MaxSamplingCount outside 1..10;
 *     StartTime or CreateTime negative;
 *   - a task already over (StartTime + Duration before now).
 *
 * Pure but for logging; any thread (the profiler's fetch thread; the fuzzer).
 */
#ifndef SW_PROFILE_PROFILE_TASK_H
#define SW_PROFILE_PROFILE_TASK_H

#include <stddef.h>
#include <stdint.h>

#define SW__PROFILE_COMMAND       "ProfileTaskQuery"
#define SW__PROFILE_TASK_ID_MAX   128 /* bytes of a task id, NUL included */
#define SW__PROFILE_ENDPOINT_MAX  256 /* bytes of an endpoint name, NUL included */
#define SW__PROFILE_DURATION_MIN  1   /* minutes, as the Java agent */
#define SW__PROFILE_DURATION_MAX  15
#define SW__PROFILE_DUMP_MIN_MS   10
#define SW__PROFILE_DUMP_MAX_MS   60000
#define SW__PROFILE_SAMPLING_MAX  10
#define SW__PROFILE_THRESHOLD_MAX 3600000

typedef struct sw__profile_task {
    char task_id[SW__PROFILE_TASK_ID_MAX];
    char endpoint[SW__PROFILE_ENDPOINT_MAX]; /* the first span's operation name to profile */
    int64_t start_ms;                        /* sampling starts then... */
    int64_t end_ms;                          /* ...and ends then (start + duration) */
    int64_t create_ms;
    uint32_t duration_min;
    uint32_t min_duration_ms;    /* a segment is sampled once it has been open this long */
    uint32_t dump_period_ms;     /* one sample per this period */
    uint32_t max_sampling_count; /* segments of the task profiled at most (the Java agent's) */
} sw__profile_task_t;

/*
 * Parses a packed Commands answer (`len` bytes): every ProfileTaskQuery command is checked as
 * above; valid tasks go to out[0..max) in the order received (more than max are refused,
 * logged). *last_create_ms is raised to the greatest CreateTime among the ProfileTaskQuery
 * commands, refused ones too (so a refused task is not asked for again). `now_ms` is the wall
 * clock. Returns the number of tasks written, or -1 when `data` is no Commands message (logged).
 */
int sw__profile_tasks_parse(const uint8_t *data, size_t len, int64_t now_ms,
                            sw__profile_task_t *out, size_t max, int64_t *last_create_ms);

#endif /* SW_PROFILE_PROFILE_TASK_H */
