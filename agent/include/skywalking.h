/*
 * skywalking.h - the public API of skywalking-c, a tracing agent for C and C++ programs that
 * speaks Apache SkyWalking's v3 protocol.
 *
 * A program starts the agent once (sw_init), then opens and closes spans on any thread:
 *
 *     sw_init(NULL);                                   // configuration from the environment
 *     sw_entry_span_begin("GET /orders", incoming_sw8); // sw8 may be NULL
 *       sw_exit_span_begin("SELECT orders", "db:5432");
 *       sw_span_tag("db.statement", "SELECT ...");
 *       sw_span_end();
 *     sw_span_end();                                   // stack empty: the segment is reported
 *     sw_shutdown();                                   // drains and flushes the reporter
 *
 * Every thread keeps its own span stack (a SkyWalking TracingContext): a span is always opened
 * and closed on the same thread, the innermost open span is "the active span" that the setters
 * act on, and the thread's segment is finished and handed to the reporter when its last span
 * ends. Spans carry SkyWalking's ids (span 0 is the first, its parent is -1).
 *
 * Threads: every function may be called from any thread. sw_init and sw_shutdown must not race
 * each other, and sw_shutdown must not race span calls on other threads (call it after the
 * program's own threads stopped tracing, e.g. at exit): spans still open elsewhere are then
 * discarded safely when they end. Nothing here blocks on the network; span calls never block.
 *
 * When the agent is off (before sw_init, after sw_shutdown, after a failed sw_init) every call
 * is a cheap no-op: begin/end pairs still balance, setters return SW_ENOSPAN.
 *
 * Errors: functions return SW_OK (0) or a negative SW_E* code from the table below, and each
 * function's comment lists every code it can return; sw_strerror and sw_err_name turn a code
 * into text. Where the code cannot say what was wrong (which setting, which file), the
 * configuration functions also write a message to the caller's errbuf, and sw_init logs it
 * (see sw_set_log_handler). Functions without a return value cannot fail.
 */
#ifndef SKYWALKING_H
#define SKYWALKING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Error codes: SW_OK (0) is success, every error is a negative code from this table, in the
 * agent's own range -301..-399. The agent's two libraries have their own ranges,
 * libdatacarrier -101..-199 (DC_E*) and libkproducer -201..-299 (KP_E*), so no number means
 * two things. Append a new code at the end with the next free number; never renumber.
 */
#define SW_ERRNO_MAP(X)                                                             \
    X(INVAL, -301, "invalid argument")                                              \
    X(NOMEM, -302, "out of memory")                                                 \
    X(CONFIG, -303, "invalid configuration")                                        \
    X(STATE, -304, "not allowed in the agent's current state")                      \
    X(NOSPAN, -305, "no active span on this thread")                                \
    X(NOTEXIT, -306, "the active span is not an exit span")                         \
    X(NOTRACED, -307,                                                               \
      "the active span is not recorded (trace not sampled or over the span limit)") \
    X(NOSPACE, -308, "the caller's buffer is too small")                            \
    X(LIMIT, -309, "a size or count limit was reached")                             \
    X(NOTFOUND, -310, "no such key")                                                \
    X(IO, -311, "input/output error")                                               \
    X(THREAD, -312, "could not start a thread")                                     \
    X(NOTSUP, -313, "not supported by this build")                                  \
    X(BUSY, -314, "the request context is in use on another thread")

typedef enum sw_errno {
    SW_OK = 0,
#define SW_ERRNO_ENUM(name, code, text) SW_E##name = code,
    SW_ERRNO_MAP(SW_ERRNO_ENUM)
#undef SW_ERRNO_ENUM
} sw_errno_t;

/*
 * Returns "SW_OK" for 0, "SW_EINVAL" etc. for a code of the table, and also the name of a
 * DC_E* or KP_E* code of the two libraries the agent is built on ("DC_ENOMEM",
 * "KP_EMSG_SIZE_TOO_LARGE"), "unknown" for anything else. Never NULL; any thread.
 */
const char *sw_err_name(int code);
/* Returns the human message for a code, an SW_E*, DC_E* or KP_E* one ("success" for 0,
 * "unknown error" for anything else). Never NULL; any thread. */
const char *sw_strerror(int code);

/* ----------------------------------------------------------------------------------------- */
/* Logging                                                                                    */
/* ----------------------------------------------------------------------------------------- */

/*
 * Every message of the agent (a bad setting at sw_init, a collector or broker that is down or
 * rejects the agent, a command the agent ignores) goes through one path. By default a message
 * is written to stderr as one line, "skywalking-c <level>: <message>\n", in a single write(2).
 * Repeats are rate-limited: each place in the agent that logs may emit 5 lines a minute; the
 * next line after that says how many similar messages were suppressed. Text that came from
 * outside (a collector's command, a broker's error string, a config file line) is escaped
 * (control and non-ASCII bytes as \xNN) and cut to a bounded length; secrets (the token of
 * SW_AGENT_AUTHENTICATION, properties named *password*, *secret*, *token*, *jaas*) are never
 * part of a message.
 */
typedef enum sw_log_level {
    SW_LOG_ERROR = 0, /* the agent stays off or loses data */
    SW_LOG_WARN = 1,  /* something outside misbehaves; the agent copes (data may count failed) */
    SW_LOG_INFO = 2,  /* a state change worth knowing (a collector is reachable again) */
    SW_LOG_DEBUG = 3,
} sw_log_level_t;

/*
 * Receives one message: `message` is one line of printable text without a newline (at most
 * 1024 bytes plus a suppression note), valid only during the call.
 *
 * Threads and blocking: the handler is called on whichever agent or application thread logs
 * (sw_init's caller, the reporter's consumer thread, the management thread, the Kafka sender's
 * callbacks), never two calls at once (the agent serialises them under one lock). It must
 * return promptly (messages are rare, but a handler that blocks stalls the agent's thread that
 * logged, and with it the reporting) and must not call back into the agent (no sw_* function:
 * it would deadlock or recurse).
 */
typedef void (*sw_log_handler_t)(sw_log_level_t level, const char *message, void *opaque);

/*
 * Routes the agent's messages to `handler` (with `opaque`), or back to stderr when handler is
 * NULL. May be called at any time, before sw_init too, from any thread; when it returns, the
 * previous handler is not running and will not be called again. Cannot fail.
 */
void sw_set_log_handler(sw_log_handler_t handler, void *opaque);

/* Drops messages less severe than `level` (default SW_LOG_INFO). Any thread, any time. Cannot
 * fail (a level above SW_LOG_DEBUG keeps every message). */
void sw_set_log_level(sw_log_level_t level);

/* "error", "warn", "info", "debug" ("unknown" otherwise). Never NULL. */
const char *sw_log_level_name(sw_log_level_t level);

/* ----------------------------------------------------------------------------------------- */
/* Configuration                                                                              */
/* ----------------------------------------------------------------------------------------- */

/*
 * Every setting has the name of its environment variable (SkyWalking's names where they exist):
 *
 *   SW_AGENT_NAME                       service name (default: the program's name)
 *   SW_AGENT_INSTANCE_NAME              instance name (default: <32 hex>@<hostname>)
 *   SW_AGENT_SAMPLE                     traces sampled per 3 s; <= 0 means all (default -1)
 *   SW_AGENT_SPAN_LIMIT                 spans per segment, 1..10000 (default 300)
 *   SW_AGENT_PROPAGATION                trace headers the instrumentation reads and writes:
 *                                       sw8 (default) | tracecontext | sw8,tracecontext |
 *                                       tracecontext,sw8 (W3C traceparent/tracestate; on
 *                                       entry the first listed format with a valid header
 *                                       wins; on exit every listed format is sent)
 *   SW_AGENT_IGNORE_SUFFIX              comma list; operations ending so are not traced
 *   SW_AGENT_SEGMENT_ARENA_BYTES        per-segment bytes for strings/tags (default 16384)
 *   SW_AGENT_COLLECTOR_BACKEND_SERVICES OAP gRPC host:port[,host:port...] (selects the gRPC
 *                                       reporter; the next address is tried on UNAVAILABLE)
 *   SW_AGENT_AUTHENTICATION             OAP token, sent as gRPC metadata `authentication`
 *   SW_AGENT_GRPC_TIMEOUT_MS            deadline of each gRPC call, 100..600000 (10000)
 *   SW_AGENT_SSL                        true: gRPC over TLS (default false)
 *   SW_AGENT_SSL_CA_FILE                PEM roots for SW_AGENT_SSL (default: gRPC's roots)
 *   SW_KAFKA_BOOTSTRAP_SERVERS          Kafka brokers host:port,... (selects the Kafka reporter)
 *   SW_KAFKA_NAMESPACE                  topic prefix: topics become <ns>-<topic>
 *   SW_KAFKA_PRODUCER_CONFIG            producer properties, comma-separated name=value
 *                                       (Java names: acks=1,linger.ms=20,max.block.ms=1000 ...)
 *   SW_KAFKA_TOPIC_SEGMENT              segment topic (default skywalking-segments)
 *   SW_KAFKA_TOPIC_MANAGEMENT           management topic (default skywalking-managements)
 *   SW_AGENT_HEARTBEAT_PERIOD           seconds between instance keep-alives, 1..86400 (30)
 *   SW_REPORTER                         file | kafka | grpc (default: file)
 *   SW_REPORTER_FILE_PATH               file reporter output (default skywalking-segments.bin)
 *   SW_BUFFER_CHANNEL_SIZE              DataCarrier channels (default 5)
 *   SW_BUFFER_BUFFER_SIZE               slots per channel (default 300)
 *   SW_BUFFER_CONSUME_CYCLE_MS          how long the consumer with nothing to do naps before it
 *                                       looks again, 1..60000 (default 500; a half-full channel
 *                                       wakes it earlier): finished segments leave at most about
 *                                       this late, and each wake-up costs CPU
 *   SW_METER_REPORT_INTERVAL            seconds between meter reports (Kafka and gRPC), 0 = no
 *                                       meters, 1..86400 (default 20)
 *   SW_AGENT_CDS_INTERVAL               seconds between dynamic configuration fetches (gRPC
 *                                       only), 0 = none, 1..86400 (default 20)
 *   SW_KAFKA_TOPIC_METER                meter topic (default skywalking-meters)
 *   SW_AGENT_MAX_SEGMENTS               segment blocks the agent may hold at once, 0..16777216;
 *                                       0 (default) derives it from the DataCarrier: 2 x the
 *                                       slots of all channels (each rounded up to a power of
 *                                       two) + 256. A block is ~ 1.6 KiB + 48 B x SPAN_LIMIT +
 *                                       ARENA_BYTES: 32,424 B at the defaults, so the default
 *                                       cap of 5,376 blocks bounds segment memory to 174 MB.
 *                                       A sampled trace that finds no block is not recorded and
 *                                       counts as finished and dropped (see sw_stats_t). A
 *                                       block is held while its trace is open, and after that
 *                                       only by a segment of more than 16 spans waiting for
 *                                       the reporter; smaller finished segments wait encoded,
 *                                       in 16 KiB chunks of which at most cap / 4 + 64 exist
 *                                       (22 MiB at the defaults); a segment finished at that
 *                                       cap counts as dropped.
 *   SW_LOG_MAX_MESSAGE_SIZE             bytes of an sw_log message kept, 16..1048576 (10240,
 *                                       the Java agent's log.max_message_size); longer text
 *                                       is cut (at a UTF-8 boundary) and counted
 *   SW_LOG_QUEUE_SIZE                   sw_log lines queued for the sender, 1..1048576 (1024);
 *                                       a line that finds the queue full is dropped, counted
 *   SW_KAFKA_TOPIC_LOGGING              log topic (default skywalking-logs)
 *   SW_AGENT_SSL_KEY_PATH               PEM private key of the agent's client certificate
 *                                       (gRPC mutual TLS; with SW_AGENT_SSL_CERT_CHAIN_PATH)
 *   SW_AGENT_SSL_CERT_CHAIN_PATH        PEM certificate chain presented with that key
 *   SW_AGENT_CRASH_RECORDER             true (default; off in ASan/TSan builds): on SIGSEGV,
 *                                       SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGSYS the open spans
 *                                       are spooled and sent by the service's next start
 *   SW_AGENT_CRASH_DIR                  where the crash spools live, the user's own directory
 *                                       (default /var/tmp/skywalking-c-crash-<euid>)

 *   SW_AGENT_PROFILE_ACTIVE             true (default): answer the OAP's profile tasks (gRPC
 *                                       reporter only; see docs/PROFILING.md)
 *   SW_AGENT_PROFILE_CHECK_INTERVAL     seconds between profile task fetches, 1..86400 (20)
 *   SW_AGENT_PROFILE_MAX_PARALLEL       segments profiled at once, 1..64 (5)
 *   SW_AGENT_PROFILE_DUMP_MAX_STACK_DEPTH  frames kept of a sampled stack, 1..4096 (500)
 *
 * SW_AGENT_CONFIG=path names a file of `KEY=value` lines (# starts a comment); the environment
 * overrides the file.
 *
 * sw_init checks every setting whatever reporter is selected: text without control bytes
 * (tabs allowed in lists, not in the two names); SW_AGENT_AUTHENTICATION printable ASCII and
 * never printed (nor any producer property named *password*, *secret*, *token*, *jaas*);
 * host:port lists; Kafka topic names as Kafka checks them ([a-zA-Z0-9._-], 1..249, not . or
 * .., with the namespace prefix); SW_KAFKA_PRODUCER_CONFIG against the producer; and
 * SW_AGENT_SSL_CA_FILE read and parsed (PEM with at least one certificate). Files named by
 * settings must be regular files or character devices such as /dev/null.
 */
/* SW_AGENT_PROPAGATION: which trace headers entry and exit spans of the instrumentation read
   and write (sw_config_t.propagation). */
typedef enum sw_propagation {
    SW_PROPAGATION_SW8 = 0,              /* "sw8": SkyWalking's headers only (default) */
    SW_PROPAGATION_TRACECONTEXT = 1,     /* "tracecontext": W3C traceparent/tracestate only */
    SW_PROPAGATION_SW8_TRACECONTEXT = 2, /* "sw8,tracecontext": both, sw8 first on entry */
    SW_PROPAGATION_TRACECONTEXT_SW8 = 3, /* "tracecontext,sw8": both, traceparent first */
} sw_propagation_t;

#define SW_CONFIG_NAME_MAX 256
#define SW_CONFIG_TEXT_MAX 1024

typedef struct sw_config {
    char service_name[SW_CONFIG_NAME_MAX];
    char instance_name[SW_CONFIG_NAME_MAX];
    int32_t sample_n_per_3_secs;
    uint32_t span_limit_per_segment;
    uint32_t segment_arena_bytes;
    char ignore_suffix[SW_CONFIG_TEXT_MAX];
    char backend_services[SW_CONFIG_TEXT_MAX];
    char authentication[SW_CONFIG_NAME_MAX];
    char kafka_bootstrap_servers[SW_CONFIG_TEXT_MAX];
    char kafka_namespace[SW_CONFIG_NAME_MAX];
    char kafka_producer_config[SW_CONFIG_TEXT_MAX];
    char kafka_topic_segment[SW_CONFIG_NAME_MAX];
    char kafka_topic_management[SW_CONFIG_NAME_MAX];
    uint32_t heartbeat_period_s;
    uint32_t grpc_timeout_ms;
    bool grpc_ssl;
    char grpc_ssl_ca_file[SW_CONFIG_TEXT_MAX];
    char reporter[16];
    char file_path[SW_CONFIG_TEXT_MAX];
    uint32_t buffer_channel_size;
    uint32_t buffer_buffer_size;
    uint32_t max_segments; /* 0: derived from the buffer sizes */
    uint32_t propagation;  /* sw_propagation_t (SW_AGENT_PROPAGATION) */
    /* Meters and dynamic configuration. */
    uint32_t meter_report_interval_s; /* 0: no meters */
    uint32_t cds_interval_s;          /* 0: no configuration discovery */
    char kafka_topic_meter[SW_CONFIG_NAME_MAX];
    /* Application logs to the OAP (sw_log) and gRPC mutual TLS; appended to keep the layout
       of the fields above. */
    uint32_t log_max_message_size;
    uint32_t log_queue_size;
    char kafka_topic_logging[SW_CONFIG_NAME_MAX];
    char grpc_ssl_key_path[SW_CONFIG_TEXT_MAX];
    char grpc_ssl_cert_chain_path[SW_CONFIG_TEXT_MAX];
    /* The preload library's plugins (libskywalking-preload.so); a program that links the agent
       and traces its own calls does not use them. Appended like the fields above. */
    uint32_t plugin_sql_body_max_length; /* SW_PLUGIN_SQL_BODY_MAX_LENGTH, 0..16384 */
    bool plugin_sql_parameters;          /* SW_PLUGIN_SQL_PARAMETERS */
    bool plugin_redis_trace_key;         /* SW_PLUGIN_REDIS_TRACE_KEY */
    bool plugin_syslog;                  /* SW_PLUGIN_SYSLOG */
    /* Appended like the fields above. */
    uint32_t buffer_consume_cycle_ms; /* SW_BUFFER_CONSUME_CYCLE_MS, 1..60000 */
    /* The crash flight recorder (docs/CRASH.md). Appended like the fields above. */
    bool crash_recorder;                /* SW_AGENT_CRASH_RECORDER (default true) */
    char crash_dir[SW_CONFIG_TEXT_MAX]; /* SW_AGENT_CRASH_DIR ("": the default) */

    /* Trace profiling (gRPC reporter only). Appended like the fields above. */
    bool profile_active;                   /* SW_AGENT_PROFILE_ACTIVE (true) */
    uint32_t profile_check_interval_s;     /* SW_AGENT_PROFILE_CHECK_INTERVAL, 1..86400 (20) */
    uint32_t profile_max_parallel;         /* SW_AGENT_PROFILE_MAX_PARALLEL, 1..64 (5) */
    uint32_t profile_dump_max_stack_depth; /* SW_AGENT_PROFILE_DUMP_MAX_STACK_DEPTH, 1..4096 */
} sw_config_t;

/* Fills `cfg` with the defaults (empty names are resolved by sw_init). Any thread. Cannot fail
 * (NULL is a no-op). */
void sw_config_init(sw_config_t *cfg);

/*
 * Sets one setting by its environment name (`key`, e.g. "SW_AGENT_SAMPLE") from text. Returns
 * SW_OK; SW_EINVAL (cfg or key NULL; a NULL value is the empty value); or SW_ECONFIG for an
 * unknown key or a bad value. On an error a message naming the key is written to errbuf (if not
 * NULL) and `cfg` is unchanged. Any thread; pure (no I/O).
 */
int sw_config_set(sw_config_t *cfg, const char *key, const char *value, char *errbuf,
                  size_t errlen);

/*
 * Applies the file named by SW_AGENT_CONFIG (if set), then every known SW_* environment
 * variable. Returns SW_OK; SW_EINVAL (cfg NULL); SW_ECONFIG (a bad setting, or a file that
 * cannot be opened or read or is too large: a message naming the key, and file and line, in
 * errbuf; never the content of a line that is not KEY=value, never a secret's value); or
 * SW_ENOMEM (no memory to read the file). On error `cfg` may hold the settings applied before
 * the bad one. Reads the file (opened without blocking;
 * a FIFO, socket or directory is refused); any thread.
 *
 * In a process with elevated privileges (getauxval(AT_SECURE): setuid, setgid, file
 * capabilities) nothing is read and SW_ECONFIG is returned with a message saying so: such a
 * program must pass its configuration to sw_init, which then uses only that.
 */
int sw_config_load(sw_config_t *cfg, char *errbuf, size_t errlen);

/* ----------------------------------------------------------------------------------------- */
/* Lifecycle                                                                                  */
/* ----------------------------------------------------------------------------------------- */

/*
 * Starts the agent: with `cfg` (copied) or, when NULL, the defaults + sw_config_load().
 * Opens the reporter (the file reporter by default) and starts one consumer thread. Returns:
 *   SW_OK       the agent runs.
 *   SW_ECONFIG  a bad setting (also a file named by a setting that cannot be used, a Kafka
 *               producer property the producer refuses).
 *   SW_ESTATE   already running.
 *   SW_EIO      the file reporter cannot open its output.
 *   SW_ENOTSUP  SW_REPORTER names a reporter this build lacks, or is grpc in a forked child of a
 *               process that used gRPC (Debian's gRPC cannot be used again after fork).
 *   SW_ENOMEM   out of memory.
 *   SW_ETHREAD  a reporter or consumer thread could not be started.
 * On every error a message naming the setting is logged (see sw_set_log_handler) and the agent
 * stays off; the host program keeps running either way.
 */
int sw_init(const sw_config_t *cfg);

/*
 * Stops the agent: new spans become no-ops, every finished segment is encoded and handed to the
 * reporter, the reporter is flushed and closed, and the counters of this run stay readable
 * through sw_stats. Blocks until the consumer thread has drained (bounded by the queue size).
 * Returns SW_OK or SW_ESTATE (not running). Also registered with atexit() by sw_init.
 */
int sw_shutdown(void);

/* True while the agent runs. Any thread; never blocks; cannot fail. */
bool sw_enabled(void);

/* ----------------------------------------------------------------------------------------- */
/* Spans                                                                                      */
/* ----------------------------------------------------------------------------------------- */

typedef enum sw_span_type {
    SW_SPAN_ENTRY = 0,
    SW_SPAN_EXIT = 1,
    SW_SPAN_LOCAL = 2,
} sw_span_type_t;

typedef enum sw_layer {
    SW_LAYER_UNKNOWN = 0,
    SW_LAYER_DATABASE = 1,
    SW_LAYER_RPC_FRAMEWORK = 2,
    SW_LAYER_HTTP = 3,
    SW_LAYER_MQ = 4,
    SW_LAYER_CACHE = 5,
    SW_LAYER_FAAS = 6,
} sw_layer_t;

/*
 * Opens an entry span (a request arriving in this process). `sw8` is the incoming `sw8` header
 * value or NULL; a valid one continues the upstream trace (a CrossProcess reference is recorded
 * and its sample flag decides sampling), an invalid one is ignored (counted in
 * sw_stats.sw8_invalid). `operation` is copied. Every begin must be paired with sw_span_end on
 * the same thread, whatever the agent state. Never blocks, never allocates in steady state.
 * The begin functions and sw_span_end return nothing: they cannot fail (a span the agent does
 * not record is a no-op that still balances its end; sw_stats counts why it was not recorded).
 */
void sw_entry_span_begin(const char *operation, const char *sw8);

/* Same, also taking the incoming `sw8-correlation` and `sw8-x` values (each may be NULL). */
void sw_entry_span_begin_headers(const char *operation, const char *sw8,
                                 const char *sw8_correlation, const char *sw8_x);

/*
 * Same, also taking the incoming W3C Trace Context `traceparent` and `tracestate` values (each
 * may be NULL), read as SW_AGENT_PROPAGATION says: with "sw8" (the default) they are ignored;
 * with "tracecontext" only they are read (sw8, sw8-correlation and sw8-x are then ignored);
 * with "sw8,tracecontext" a valid sw8 wins and a valid traceparent is used only without one;
 * with "tracecontext,sw8" the other way round. A traceparent that wins continues its trace:
 * its trace-id becomes the trace id (32 hex digits), its sampled flag decides sampling, its
 * parent-id is tagged `w3c.parent_id` on the span, and when `tracestate` holds our `sw` member
 * (written by sw_inject_w3c upstream, forwarded by any W3C service in between) a CrossProcess
 * reference is recorded as for sw8. The other members of a valid tracestate are kept and sent
 * on by sw_inject_w3c. Invalid values are ignored, whole (docs/PROPAGATION.md).
 */
void sw_entry_span_begin_w3c(const char *operation, const char *sw8, const char *sw8_correlation,
                             const char *sw8_x, const char *traceparent, const char *tracestate);

/* Opens an exit span (a call to another process) to `peer` ("host:port", copied, may be NULL). */
void sw_exit_span_begin(const char *operation, const char *peer);

/* Opens a local span (work inside the process). `operation` is copied. */
void sw_local_span_begin(const char *operation);

/* Closes the active span; when it was the thread's last, the segment goes to the reporter. */
void sw_span_end(void);

/*
 * Setters on the active span. Each returns SW_OK, SW_ENOSPAN (no open span or agent off) or
 * SW_ENOTRACED (the span is not recorded: unsampled or over the limit; nothing to do), and
 * also SW_EINVAL where noted. Strings are copied into the segment's bounded arena; when it is
 * full they are truncated or the tag is dropped (still SW_OK), and sw_stats.arena_truncated
 * counts it.
 */
int sw_span_set_component(int32_t component_id);
/* Also SW_EINVAL: layer is not one of sw_layer_t. */
int sw_span_set_layer(sw_layer_t layer);
/* peer NULL clears it. */
int sw_span_set_peer(const char *peer);
int sw_span_set_error(bool is_error);
/* Also SW_EINVAL: key NULL (value NULL is an empty value). */
int sw_span_tag(const char *key, const char *value);

/* The longest key or value of a log's tags (sw_log_kv's tags and logger, sw_span_log's
   fields), in bytes; longer ones are cut at a UTF-8 boundary. */
#define SW_LOG_TAG_MAX 1024

typedef struct sw_kv {
    const char *key;
    const char *value;
} sw_kv_t;

/* Adds a log (an event with the current time) made of `n` key/value pairs, each key and value
 * cut to SW_LOG_TAG_MAX bytes at a UTF-8 boundary. Returns what the setters return, and
 * SW_EINVAL for kvs NULL, n 0 or n above 65535. */
int sw_span_log(const sw_kv_t *kvs, size_t n);

/* ----------------------------------------------------------------------------------------- */
/* Propagation                                                                                */
/* ----------------------------------------------------------------------------------------- */

/* Buffer sizes that always suffice for sw_inject (longer operation names are truncated). */
#define SW_SW8_MAX                2048
#define SW_CORRELATION_HEADER_MAX 1100
#define SW_SW8_X_MAX              32

/*
 * Writes the outgoing header values for the active exit span: `sw8`, `sw8-correlation` (empty
 * when there is no correlation data) and `sw8-x`, each NUL-terminated into a caller buffer (a
 * NULL buffer skips that header). Returns 0; SW_ENOSPAN; SW_ENOTEXIT; SW_ENOTRACED (unsampled:
 * send no sw8); SW_ENOSPACE (a buffer too small; all three are then empty strings). Any thread,
 * about its own active span; never blocks.
 */
int sw_inject(char *sw8, size_t sw8_len, char *correlation, size_t correlation_len, char *sw8_x,
              size_t sw8_x_len);

/* Buffer sizes that always suffice for sw_inject_w3c. */
#define SW_TRACEPARENT_MAX 56
#define SW_TRACESTATE_MAX  1024

/*
 * Writes the W3C Trace Context header values for the active exit span, each NUL-terminated
 * into a caller buffer (a NULL buffer skips that header), whatever SW_AGENT_PROPAGATION says
 * (the setting decides what the bundled instrumentation sends):
 *   traceparent  "00-<trace-id>-<parent-id>-01": trace-id is the trace id when it is 32 hex
 *                digits, else a 128-bit hash of it; parent-id is a 64-bit hash of the segment
 *                id and the span id (the same for every call on this span);
 *   tracestate   our member `sw=` (parent segment, span, service, instance, endpoint, peer:
 *                what traceparent has no field for, at most 256 bytes) first, then the members
 *                that came in with the trace's entry span (never another `sw`, at most 32
 *                members in all, trimmed as the specification says).
 * In a trace that is not recorded because its incoming traceparent had the sampled flag off,
 * that traceparent is passed on unchanged but for flags 00 (there is no span of ours to name;
 * tracestate empty), so that the downstream keeps the decision: 0 is returned.
 * Returns 0; SW_ENOSPAN; SW_ENOTEXIT; SW_ENOTRACED (unsampled otherwise: send nothing);
 * SW_ENOSPACE (a buffer too small; both are then empty strings). Any thread, about its own
 * active span.
 */
int sw_inject_w3c(char *traceparent, size_t traceparent_len, char *tracestate,
                  size_t tracestate_len);

/* Correlation data travels with the trace in `sw8-correlation`. */
#define SW_CORRELATION_MAX_ELEMENTS 3
#define SW_CORRELATION_VALUE_MAX    128 /* bytes, keys and values, without the NUL */

typedef struct sw_correlation {
    uint32_t count;
    struct {
        char key[SW_CORRELATION_VALUE_MAX + 1];
        char value[SW_CORRELATION_VALUE_MAX + 1];
    } items[SW_CORRELATION_MAX_ELEMENTS];
} sw_correlation_t;

/*
 * Sets `key` to `value` in the current trace's correlation data (value NULL or "" removes it).
 * Returns SW_OK; SW_EINVAL (key NULL or empty); SW_ELIMIT (key or value longer than 128 bytes,
 * or a 4th key); SW_ENOSPAN; SW_ENOTRACED.
 */
int sw_correlation_set(const char *key, const char *value);

/* Copies the value of `key` into buf. Returns its length (>= 0); SW_EINVAL (key NULL);
 * SW_ENOTFOUND; SW_ENOSPACE (buf NULL or shorter than the value and its NUL); SW_ENOSPAN or
 * SW_ENOTRACED. */
int sw_correlation_get(const char *key, char *buf, size_t len);

/*
 * A captured position in a trace, to continue it on another thread. A plain value: copy it,
 * keep it on the stack, hand it over; there is nothing to free. Treat the fields as private.
 */
typedef struct sw_snapshot {
    int32_t span_id; /* -1: not captured */
    char trace_id[256];
    char segment_id[96];
    char endpoint[256];
    sw_correlation_t correlation;
} sw_snapshot_t;

/*
 * Captures the active span into `snap`. Returns SW_OK, SW_EINVAL (snap NULL), SW_ENOSPAN or
 * SW_ENOTRACED (then snap is marked not captured and sw_continue refuses it). Never blocks.
 */
int sw_capture(sw_snapshot_t *snap);

/*
 * Links the active span of this thread to a captured span (a CrossThread reference) and joins
 * its trace and correlation data. Typical: sw_local_span_begin("work"); sw_continue(&snap).
 * Returns SW_OK, SW_EINVAL (NULL, not captured, or not a value sw_capture wrote), SW_ENOSPAN,
 * SW_ENOTRACED or SW_ELIMIT (too many references on this segment).
 */
int sw_continue(const sw_snapshot_t *snap);

/* ----------------------------------------------------------------------------------------- */
/* Request contexts: spans as handles, for event loops and callbacks                          */
/* ----------------------------------------------------------------------------------------- */

/*
 * The span API above keeps each thread's spans on a stack: a request must begin and end on one
 * thread, in stack order. A program that interleaves many requests on one thread (an event
 * loop: libevent, libuv, epoll, nginx) or hands a request from thread to thread holds a request
 * context instead. A context is one trace segment; its spans are handles (sw_span_ref_t) that
 * the program keeps in its own per-request state, begins under an explicit parent, and ends in
 * any order. The context reports its segment when its last span ends.
 *
 *     sw_span_ref_t entry, exit;
 *     sw_headers_t in = {.sw8 = incoming_sw8};                 // any header may be NULL
 *     sw_context_begin_entry("GET /orders", &in, &entry);     // a new context
 *     sw_span_ref_begin_exit(entry, "GET", "cache:6379", &exit);
 *     sw_span_ref_inject(exit, sw8, sizeof sw8, NULL, 0, NULL, 0);
 *     ... later, in another callback, maybe on another thread ...
 *     sw_span_ref_end(exit);
 *     sw_span_ref_end(entry);                                 // last span: segment reported
 *
 * A reference is a plain value: copy it into the request's state; there is nothing to free.
 * Sampling, SW_AGENT_IGNORE_SUFFIX, the span limit and sw_stats apply as to stack spans. A
 * context that is not recorded (agent off, not sampled, ignored, no segment block) hands out
 * references on which every call returns SW_ENOTRACED and every end is a no-op, so the program
 * needs no special case.
 *
 * Threads: a context is used by one thread at a time, and may move to another thread between
 * two calls (the program's own hand-off, e.g. a queue, orders them). No lock is taken. A call
 * on a context that another thread has attached (sw_context_attach) returns SW_EBUSY; other
 * concurrent use cannot be seen and is the program's error.
 *
 * Errors common to the sw_span_ref_* functions: SW_EINVAL (a reference no begin function wrote,
 * or one of another process's run), SW_ENOSPAN (the span already ended, or its context ended
 * or belongs to an agent run that sw_shutdown closed), SW_ENOTRACED (not recorded), SW_EBUSY.
 * A reference to a context that ended must not be used after sw_shutdown returned (its memory
 * is freed then); until then it is refused safely. A context whose spans are not all ended by
 * sw_shutdown is lost and counted in sw_stats.contexts_open. Never blocks; no allocation in
 * steady state.
 */
typedef struct sw_context sw_context_t;

/* A span of a request context. Treat the fields as private. */
typedef struct sw_span_ref {
    sw_context_t *context;
    uint32_t generation;
    int32_t id; /* -1: not recorded */
} sw_span_ref_t;

/* Incoming propagation headers of a request; NULL members are absent. They are read as
   sw_entry_span_begin_w3c reads them (SW_AGENT_PROPAGATION decides which count). */
typedef struct sw_headers {
    const char *sw8;
    const char *sw8_correlation;
    const char *sw8_x;
    const char *traceparent;
    const char *tracestate;
} sw_headers_t;

/*
 * Begins a new request context with its first span: an entry span continuing `incoming` (NULL:
 * no headers), a local span, or an exit span to `peer` (copied, may be NULL). `operation` is
 * copied. Writes *span in every case. Returns SW_OK; SW_ENOTRACED (the context is not recorded:
 * agent off, not sampled, ignored, or no segment block, each counted in sw_stats as for
 * sw_entry_span_begin); SW_EINVAL (span NULL). Any thread.
 */
int sw_context_begin_entry(const char *operation, const sw_headers_t *incoming,
                           sw_span_ref_t *span);
int sw_context_begin_local(const char *operation, sw_span_ref_t *span);
int sw_context_begin_exit(const char *operation, const char *peer, sw_span_ref_t *span);

/*
 * Begins a span of `parent`'s context whose parent is `parent` (which may have ended already:
 * its context must not have). Writes *span in every case (not recorded on error, or past the
 * span limit, which also returns SW_ENOTRACED and counts in sw_stats.spans_limited).
 */
int sw_span_ref_begin_entry(sw_span_ref_t parent, const char *operation, sw_span_ref_t *span);
int sw_span_ref_begin_local(sw_span_ref_t parent, const char *operation, sw_span_ref_t *span);
int sw_span_ref_begin_exit(sw_span_ref_t parent, const char *operation, const char *peer,
                           sw_span_ref_t *span);

/*
 * Ends the span. When it was the last open span of its context (and the context is not
 * attached), the segment goes to the reporter and every reference to the context becomes
 * stale. Returns SW_OK, SW_OK for a span that is not recorded (nothing to do), SW_ENOSPAN
 * (ended already), SW_EINVAL, SW_EBUSY.
 */
int sw_span_ref_end(sw_span_ref_t span);

/* The setters of the stack API, on a span reference; same returns and copies. */
int sw_span_ref_set_component(sw_span_ref_t span, int32_t component_id);
int sw_span_ref_set_layer(sw_span_ref_t span, sw_layer_t layer);
int sw_span_ref_set_peer(sw_span_ref_t span, const char *peer);
int sw_span_ref_set_error(sw_span_ref_t span, bool is_error);
int sw_span_ref_tag(sw_span_ref_t span, const char *key, const char *value);
int sw_span_ref_log(sw_span_ref_t span, const sw_kv_t *kvs, size_t n);

/* sw_inject and sw_inject_w3c for an exit span reference; same buffers and returns. */
int sw_span_ref_inject(sw_span_ref_t span, char *sw8, size_t sw8_len, char *correlation,
                       size_t correlation_len, char *sw8_x, size_t sw8_x_len);
int sw_span_ref_inject_w3c(sw_span_ref_t span, char *traceparent, size_t traceparent_len,
                           char *tracestate, size_t tracestate_len);

/* sw_capture and sw_continue for a span reference: capture a position of one context, and
   record it as a CrossThread reference on a span of another (typically the first span of a
   context begun for work handed to another thread). Same returns. */
int sw_span_ref_capture(sw_span_ref_t span, sw_snapshot_t *snap);
int sw_span_ref_continue(sw_span_ref_t span, const sw_snapshot_t *snap);

/* What sw_context_attach replaced on the thread, for sw_context_detach. Treat as private. */
typedef struct sw_attach {
    void *segment_;
    sw_context_t *context_;
    int32_t active_;
    uint32_t noop_depth_;
    uint32_t generation_;
    bool unrecorded_;
    bool attached_;
    bool nested_;
} sw_attach_t;

/*
 * Makes `span`'s context the calling thread's active trace and `span` its active span, so that
 * code using the stack API on this thread (sw_exit_span_begin ... sw_span_end, sw_inject,
 * sw_log, and the LD_PRELOAD plugins: a libpq, hiredis or libcurl call made inside an event-loop
 * callback) records into this request, under `span`. Saves the thread's previous state in
 * *saved. Spans begun through the stack API while attached must end before sw_context_detach.
 * The context is not reported while attached, even if all its handle spans ended.
 * Returns SW_OK; SW_ENOTRACED (not recorded: the thread's state is saved and the stack API
 * records nothing until detach); SW_EINVAL (saved NULL, or a bad reference); SW_ENOSPAN;
 * SW_EBUSY (attached on another thread). Every attach that returns SW_OK or SW_ENOTRACED must be
 * paired with sw_context_detach(saved) on the same thread; attaches nest (detach in reverse).
 */
int sw_context_attach(sw_span_ref_t span, sw_attach_t *saved);

/*
 * Restores what sw_context_attach saved in *saved, and reports the context when its spans all
 * ended while it was attached. Returns SW_OK or SW_EINVAL (saved NULL or not from an attach,
 * or already detached).
 */
int sw_context_detach(sw_attach_t *saved);

/* ----------------------------------------------------------------------------------------- */
/* Application logs to the OAP                                                                */
/* ----------------------------------------------------------------------------------------- */

/*
 * sw_log and sw_log_kv send the PROGRAM's own log lines to the OAP as SkyWalking LogData
 * (skywalking.v3.LogReportService/collect over gRPC; topic skywalking-logs, key = service,
 * over Kafka), so that the OAP shows them next to the trace that was active when they were
 * logged. They are not the agent's diagnostics: those are the "Logging" section above
 * (sw_set_log_handler, sw_set_log_level, sw_log_level_t), which only ever reach the host's
 * stderr or handler and are never sent anywhere. The two never mix: sw_log never calls the
 * handler, and the agent's messages are never sent as LogData.
 *
 * Each line carries: timestamp (ms), service, serviceInstance, endpoint (the operation of the
 * first span of this thread's segment, when a span is active), body.text (the message, cut to
 * SW_LOG_MAX_MESSAGE_SIZE bytes at a UTF-8 boundary; invalid UTF-8 bytes become '?'),
 * traceContext {traceId, traceSegmentId, spanId} of this thread's active span when it is
 * recorded (sampled), tags `level` (sw_log_severity_name) and `logger`, then the caller's
 * tags. The logger name and each tag key and value are cut to SW_LOG_TAG_MAX bytes at a UTF-8
 * boundary. Every string sent is valid UTF-8: invalid bytes become '?'.
 *
 * Never blocks: the line is encoded on the calling thread and put in a bounded queue
 * (SW_LOG_QUEUE_SIZE) that the agent's log sender thread empties; a full queue drops the line
 * (sw_stats.logs_dropped). No lock the sender holds is taken; the only allocation is the
 * line's own buffer (malloc). Any thread, but not a signal handler (it allocates). In a
 * forked child, lines are SW_ESTATE until the child calls sw_init itself.
 *
 * Returns 0 (queued); SW_ESTATE (agent off: the line is not recorded); SW_ENOTSUP (the file
 * reporter has no log path: not recorded); SW_ELIMIT (queue full) or SW_ENOMEM: recorded and
 * dropped; SW_EINVAL (NULL format or message, tags NULL with n > 0).
 */
typedef enum sw_log_severity {
    SW_SEVERITY_ERROR = 0,
    SW_SEVERITY_WARN = 1,
    SW_SEVERITY_INFO = 2,
    SW_SEVERITY_DEBUG = 3,
    SW_SEVERITY_TRACE = 4,
} sw_log_severity_t;

/* "ERROR", "WARN", "INFO", "DEBUG", "TRACE" (the `level` tag); "UNKNOWN" otherwise. */
const char *sw_log_severity_name(sw_log_severity_t severity);

/* A printf-formatted line with logger tag "default". */
int sw_log(sw_log_severity_t severity, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* A line with a logger name (NULL: "default") and n extra tags (copied). */
int sw_log_kv(sw_log_severity_t severity, const char *logger, const char *message,
              const sw_kv_t *tags, size_t n);

/* ----------------------------------------------------------------------------------------- */
/* Counters                                                                                   */
/* ----------------------------------------------------------------------------------------- */

typedef struct sw_stats {
    uint64_t segments_finished;  /* sampled segments whose last span ended (recorded or not,
                                    see segments_dropped), and segments of an earlier crashed
                                    process that sw_init sent (docs/CRASH.md) */
    uint64_t segments_reported;  /* written/accepted by the reporter */
    uint64_t segments_dropped;   /* never reached the reporter: queue full, agent stopping, no
                                    room to encode it (the chunk cap, or out of memory), or no
                                    segment block (SW_AGENT_MAX_SEGMENTS reached or out of
                                    memory): such a trace is not recorded, its spans are no-ops,
                                    and it counts here and in segments_finished when its root
                                    span ends) */
    uint64_t segments_failed;    /* reporter errors (or no memory for the consumer's batch) */
    uint64_t traces_sampled_out; /* trace starts not sampled (sampler or upstream flag 0) */
    uint64_t traces_ignored;     /* trace starts ignored by SW_AGENT_IGNORE_SUFFIX */
    uint64_t spans_limited;      /* spans not recorded because a segment hit its span limit */
    uint64_t arena_truncated;    /* strings truncated or tags/logs dropped: segment arena full */
    uint64_t sw8_invalid;        /* incoming sw8 values rejected as malformed */
    /* Application logs (sw_log, sw_log_kv, the syslog hook); appended to keep the layout of
       the fields above. Exact after sw_shutdown:
       logs_recorded == logs_reported + logs_dropped + logs_failed. */
    uint64_t logs_recorded;  /* lines accepted by sw_log* while the agent ran */
    uint64_t logs_reported;  /* accepted by the collector / acknowledged by Kafka */
    uint64_t logs_dropped;   /* never sent: queue full, out of memory, agent stopping */
    uint64_t logs_failed;    /* send errors */
    uint64_t logs_truncated; /* lines cut to SW_LOG_MAX_MESSAGE_SIZE (also counted above) */
    /* Request contexts (sw_context_begin_*) begun and not yet finished. A finished context
       counts in segments_finished as a stack segment does; one still open at sw_shutdown is
       lost and stays counted here in the last run's stats. */
    uint64_t contexts_open;
} sw_stats_t;

/*
 * Reads the counters of the running agent, or of the last run after sw_shutdown. Exact after
 * sw_shutdown: segments_finished == reported + dropped + failed. Any thread; takes a short lock.
 * Cannot fail (a NULL stats is ignored).
 */
void sw_stats(sw_stats_t *stats);

/* ----------------------------------------------------------------------------------------- */
/* Meters                                                                                     */
/* ----------------------------------------------------------------------------------------- */

/*
 * User meters, as the SkyWalking Java toolkit's MeterFactory offers them: a Counter (increment),
 * a Gauge (a value that is set, or a callback the agent calls), a Histogram (fixed steps,
 * addValue). Every SW_METER_REPORT_INTERVAL seconds (default 20) the agent reports every meter
 * with the process and agent meters to the OAP (MeterReportService over gRPC, or the Kafka
 * topic skywalking-meters); the file reporter reports no meters.
 *
 * Meters live for the rest of the process (they may be created before sw_init and survive
 * sw_shutdown; there is no delete), in a registry of at most SW_METER_MAX. Creating a meter
 * whose name, tags and kind equal an existing one returns that one. The handle is a plain
 * pointer, valid for the rest of the process, usable from any thread.
 *
 * Names: 1..SW_METER_NAME_MAX bytes of [A-Za-z0-9_], not starting with a digit (MAL names the
 * meter by it); do not start them with "sw_c_", the agent's own prefix. Tags: at most
 * SW_METER_TAGS_MAX pairs, keys like names, values up to SW_METER_TAG_VALUE_MAX bytes of valid
 * UTF-8 without control bytes (else SW_EINVAL); they become the meter's labels. Everything is
 * copied.
 *
 * Recording (sw_meter_counter_add, sw_meter_gauge_set, sw_meter_histogram_add) is lock-free:
 * one atomic operation (a CAS loop for a counter's double), no allocation, any thread, also
 * while the agent is off (the value is kept and reported once it runs).
 */
#define SW_METER_MAX           256
#define SW_METER_NAME_MAX      128
#define SW_METER_TAGS_MAX      8
#define SW_METER_TAG_VALUE_MAX 256
#define SW_METER_STEPS_MAX     64

typedef struct sw_meter sw_meter_t;

/*
 * Creates a counter: a value that only changes by sw_meter_counter_add, reported as its running
 * total (MAL: `.increase('PT1M')` or `.rate('PT1M')`). Returns 0 and *out; SW_EINVAL (a bad
 * name or tag, or an existing meter of another kind with that name and tags); SW_ELIMIT
 * (SW_METER_MAX meters exist); SW_ENOMEM. Any thread; takes the registry's lock.
 */
int sw_meter_counter_new(const char *name, const sw_kv_t *tags, size_t n_tags, sw_meter_t **out);

/* Adds `delta` (may be negative, as Java's Counter.increment) to a counter. Exact for integral
   deltas while the total stays within 2^53. A NULL or non-counter meter is ignored. */
void sw_meter_counter_add(sw_meter_t *m, double delta);

/* Creates a gauge whose value is set with sw_meter_gauge_set (0 until then). Same returns as
   sw_meter_counter_new. */
int sw_meter_gauge_new(const char *name, const sw_kv_t *tags, size_t n_tags, sw_meter_t **out);

/* Sets a gauge's value. A NULL or non-gauge meter is ignored. */
void sw_meter_gauge_set(sw_meter_t *m, double value);

/*
 * Creates a gauge whose value is `supplier(opaque)` at each report (Java's Gauge with a
 * Supplier). The supplier runs on the agent's meter thread (and on the caller's thread in
 * sw_meter_value), so it must be quick and thread-safe; it must not call sw_shutdown (the
 * shutdown waits for the meter thread). A NaN it returns leaves the gauge out of that report.
 * Same returns as sw_meter_counter_new (supplier NULL: SW_EINVAL).
 */
int sw_meter_gauge_callback_new(const char *name, const sw_kv_t *tags, size_t n_tags,
                                double (*supplier)(void *opaque), void *opaque, sw_meter_t **out);

/*
 * Creates a histogram with `n_steps` (1..SW_METER_STEPS_MAX) bucket lower bounds, finite and
 * strictly ascending (Java's Histogram steps). A value v counts in the bucket of the largest
 * step <= v (a value equal to a step counts in that step's bucket); the last bucket reaches
 * +infinity; a value below steps[0] is not counted (as the Java agent does): make steps[0] the
 * lowest value you record, e.g. 0, as the toolkit's minValue. Reported with one bucket per step
 * (MAL: `.histogram().histogram_percentile([50,90,99])`). Same returns as
 * sw_meter_counter_new (bad steps: SW_EINVAL).
 */
int sw_meter_histogram_new(const char *name, const sw_kv_t *tags, size_t n_tags,
                           const double *steps, size_t n_steps, sw_meter_t **out);

/* Counts one value in a histogram. A NULL or non-histogram meter is ignored. */
void sw_meter_histogram_add(sw_meter_t *m, double value);

/*
 * Reads a meter's current value: a counter's total, a gauge's value (a callback gauge's
 * supplier is called on this thread), a histogram's count of every value counted. Returns 0
 * or SW_EINVAL (NULL). Any thread.
 */
int sw_meter_value(sw_meter_t *m, double *value);

/* ----------------------------------------------------------------------------------------- */
/* Function-level spans (-finstrument-functions)                                              */
/* ----------------------------------------------------------------------------------------- */

/*
 * A program compiled with -finstrument-functions calls these on entry to and exit from every
 * instrumented function; libskywalking defines them, and each call becomes a local span named
 * by the function's symbol, filtered by the SW_CYG_* settings (read at the first call). They
 * are declared here because libskywalking exports them; a program never calls them itself.
 */
#if defined(__GNUC__)
__attribute__((no_instrument_function))
#endif
void __cyg_profile_func_enter(void *fn, void *call_site);
#if defined(__GNUC__)
__attribute__((no_instrument_function))
#endif
void __cyg_profile_func_exit(void *fn, void *call_site);

#ifdef __cplusplus
}
#endif

#endif /* SKYWALKING_H */
