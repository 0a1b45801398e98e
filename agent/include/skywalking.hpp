/*
 * skywalking.hpp - the C++17 API of skywalking-c: header-only, over the C API of skywalking.h
 * (link libskywalking as for C; nothing here needs a C++ runtime part of the library).
 *
 *     skywalking::entry_span request("GET /orders", incoming_sw8);   // string_view or char*
 *     request.tag("http.method", "GET");
 *     {
 *         skywalking::exit_span db("SELECT orders", "db:5432");
 *         db.set_layer(SW_LAYER_DATABASE);
 *         query();                      // throws: db ends as an error span, then request too
 *     }                                 // db ends here
 *     std::thread worker(skywalking::traced("refresh cache", refresh));  // continues the trace
 *
 * Guards. entry_span, exit_span and local_span open a span in their constructor and end it in
 * their destructor, also when the scope is left by an exception: the span is then marked as an
 * error and gets a log {event: error, error.kind: exception, message: ...}, as SkyWalking's
 * Java agent records a thrown exception (std::uncaught_exceptions() tells a destructor run by
 * stack unwinding from a normal one). Guards cannot be copied or moved; they must be destroyed
 * in the reverse order of construction on the thread that made them, which a scope does.
 *
 * Active span. As in the C API, a guard's setters (tag, log, set_error, ...) act on the
 * thread's active span: the guard's own span while it is the innermost open one, which is the
 * only way to use them. Each returns what the C function it calls returns: SW_OK or one of
 * the SW_E* codes that function's comment in skywalking.h lists (a std::string_view without
 * data is passed as NULL, so tag() and correlation_set() can return SW_EINVAL for such a key).
 *
 * Strings. Every function takes std::string_view (so std::string works) and const char*. A
 * string_view is copied into a NUL-terminated buffer on the stack for the C call (on the heap
 * with malloc when it is longer; truncated should that fail); a const char* is passed as is.
 *
 * Nothing in this header throws or allocates with new. Exceptions thrown by a callable run
 * through traced() pass through it unchanged (after its span has recorded them).
 */
#ifndef SKYWALKING_HPP
#define SKYWALKING_HPP

#include "skywalking.h"

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <initializer_list>
#include <limits>
#include <string_view>
#include <type_traits>
#include <typeinfo>
#include <utility>

#if defined(__has_include)
#if __has_include(<cxxabi.h>)
#include <cxxabi.h>
#define SKYWALKING_HPP_HAVE_CXXABI 1
#endif
#endif
#ifndef SKYWALKING_HPP_HAVE_CXXABI
#define SKYWALKING_HPP_HAVE_CXXABI 0
#endif

namespace skywalking
{

namespace detail
{

/* A NUL-terminated copy of a string_view, alive for one C call. A view without data (a
   default-constructed std::string_view) gives NULL. */
template <std::size_t InPlace> class c_string
{
  public:
    explicit c_string(std::string_view text) noexcept
    {
        if (text.data() == nullptr) {
            ptr_ = nullptr;
            return;
        }
        std::size_t len = text.size();
        char *dst = in_place_;
        if (len >= InPlace) {
            heap_ = static_cast<char *>(std::malloc(len + 1));
            if (heap_ != nullptr) {
                dst = heap_;
            } else {
                len = InPlace - 1; /* out of memory: truncated, never a throw */
            }
        }
        std::memcpy(dst, text.data(), len);
        dst[len] = '\0';
        ptr_ = dst;
    }
    ~c_string()
    {
        std::free(heap_);
    }
    c_string(const c_string &) = delete;
    c_string &operator=(const c_string &) = delete;

    const char *get() const noexcept
    {
        return ptr_;
    }

  private:
    char in_place_[InPlace];
    char *heap_ = nullptr;
    const char *ptr_;
};

/* An optional argument: an empty view means "absent" (NULL for the C API). */
inline std::string_view optional(std::string_view text) noexcept
{
    return text.empty() ? std::string_view() : text;
}

/* Operation names, keys, values, peers: short. sw8 headers: up to SW_SW8_MAX. */
using short_text = c_string<256>;
using header_text = c_string<SW_SW8_MAX>;

} // namespace detail

/*
 * A captured position in a trace (sw_capture), to continue it on another thread. A plain value:
 * copy it, move it, hand it to a thread; there is nothing to free.
 */
class snapshot
{
  public:
    /* Not captured: continuing from it does nothing (sw_continue ignores it). */
    snapshot() noexcept
    {
        snap_.span_id = -1;
    }

    /* Captures the calling thread's active span. status() is 0, SW_ENOSPAN or SW_ENOTRACED. */
    static snapshot capture() noexcept
    {
        snapshot s;
        s.status_ = sw_capture(&s.snap_);
        return s;
    }

    bool captured() const noexcept
    {
        return status_ == 0;
    }
    int status() const noexcept
    {
        return status_;
    }
    const sw_snapshot_t *get() const noexcept
    {
        return &snap_;
    }

  private:
    sw_snapshot_t snap_;
    int status_ = SW_ENOSPAN;
};

/* The outgoing header values of an exit span (sw_inject). */
struct propagation_headers {
    int status = SW_ENOSPAN; /* 0, SW_ENOSPAN, SW_ENOTEXIT, SW_ENOTRACED (send no sw8) */
    char sw8[SW_SW8_MAX] = "";
    char correlation[SW_CORRELATION_HEADER_MAX] = ""; /* empty: no correlation data */
    char sw8_x[SW_SW8_X_MAX] = "";

    bool ok() const noexcept
    {
        return status == 0;
    }
};

/* The outgoing W3C Trace Context values of an exit span (sw_inject_w3c). */
struct w3c_headers {
    int status = SW_ENOSPAN; /* 0, SW_ENOSPAN, SW_ENOTEXIT, SW_ENOTRACED (send none) */
    char traceparent[SW_TRACEPARENT_MAX] = "";
    char tracestate[SW_TRACESTATE_MAX] = "";

    bool ok() const noexcept
    {
        return status == 0;
    }
};

/* What the three guards share: the setters, and ending the span when the scope ends. */
class span
{
  public:
    span(const span &) = delete;
    span &operator=(const span &) = delete;
    span(span &&) = delete;
    span &operator=(span &&) = delete;

    int tag(const char *key, const char *value) noexcept
    {
        return sw_span_tag(key, value);
    }
    int tag(std::string_view key, std::string_view value) noexcept
    {
        detail::short_text k(key), v(value);
        return sw_span_tag(k.get(), v.get());
    }

    /* A log with one key/value pair (an event at the current time). */
    int log(const char *key, const char *value) noexcept
    {
        const sw_kv_t kv = {key, value};
        return sw_span_log(&kv, 1);
    }
    int log(std::string_view key, std::string_view value) noexcept
    {
        detail::short_text k(key), v(value);
        return log(k.get(), v.get());
    }
    /* A log of n pairs, as sw_span_log. */
    int log(const sw_kv_t *kvs, std::size_t n) noexcept
    {
        return sw_span_log(kvs, n);
    }

    /* Marks the span as an error and logs a caught exception as the Java agent logs a
       Throwable: event=error, error.kind=<the exception's dynamic type, demangled where the
       C++ ABI offers it>, message=what(). */
    int record_exception(const std::exception &e) noexcept
    {
        sw_span_set_error(true);
        const char *kind = typeid(e).name();
#if SKYWALKING_HPP_HAVE_CXXABI
        int status = -1;
        char *demangled = abi::__cxa_demangle(kind, nullptr, nullptr, &status);
        if (status == 0 && demangled != nullptr) {
            kind = demangled;
        }
#endif
        const sw_kv_t kvs[] = {{"event", "error"}, {"error.kind", kind}, {"message", e.what()}};
        int rc = sw_span_log(kvs, 3);
#if SKYWALKING_HPP_HAVE_CXXABI
        std::free(demangled); /* __cxa_demangle allocates with malloc */
#endif
        return rc;
    }

    int set_error(bool is_error = true) noexcept
    {
        return sw_span_set_error(is_error);
    }
    int set_component(std::int32_t component_id) noexcept
    {
        return sw_span_set_component(component_id);
    }
    int set_layer(sw_layer_t layer) noexcept
    {
        return sw_span_set_layer(layer);
    }
    int set_peer(const char *peer) noexcept
    {
        return sw_span_set_peer(peer);
    }
    int set_peer(std::string_view peer) noexcept
    {
        detail::short_text p(peer);
        return sw_span_set_peer(p.get());
    }

    int correlation_set(const char *key, const char *value) noexcept
    {
        return sw_correlation_set(key, value);
    }
    int correlation_set(std::string_view key, std::string_view value) noexcept
    {
        detail::short_text k(key), v(value);
        return sw_correlation_set(k.get(), v.get());
    }

    /* This span as the parent of work on another thread (see traced()). */
    snapshot capture() const noexcept
    {
        return snapshot::capture();
    }

  protected:
    span() noexcept : exceptions_at_begin_(std::uncaught_exceptions()) {}

    /* Ends the span; an exception unwinding through the guard's scope marks it first. */
    ~span()
    {
        if (std::uncaught_exceptions() > exceptions_at_begin_) {
            sw_span_set_error(true);
            const sw_kv_t kvs[] = {{"event", "error"},
                                   {"error.kind", "exception"},
                                   {"message", "an exception left the span's scope"}};
            sw_span_log(kvs, 3);
        }
        sw_span_end();
    }

  private:
    int exceptions_at_begin_;
};

/* A request arriving in this process, continuing the upstream trace of its incoming sw8,
   sw8-correlation, sw8-x, traceparent and tracestate header values (each may be absent:
   nullptr or an empty view; which wins is sw_entry_span_begin_w3c's rule). */
class entry_span : public span
{
  public:
    explicit entry_span(const char *operation, const char *sw8 = nullptr,
                        const char *sw8_correlation = nullptr, const char *sw8_x = nullptr,
                        const char *traceparent = nullptr,
                        const char *tracestate = nullptr) noexcept
    {
        sw_entry_span_begin_w3c(operation, sw8, sw8_correlation, sw8_x, traceparent, tracestate);
    }
    explicit entry_span(std::string_view operation, std::string_view sw8 = {},
                        std::string_view sw8_correlation = {}, std::string_view sw8_x = {},
                        std::string_view traceparent = {},
                        std::string_view tracestate = {}) noexcept
    {
        detail::short_text op(operation);
        detail::header_text h(detail::optional(sw8)), corr(detail::optional(sw8_correlation));
        detail::short_text x(detail::optional(sw8_x)), tp(detail::optional(traceparent));
        detail::header_text ts(detail::optional(tracestate));
        sw_entry_span_begin_w3c(op.get(), h.get(), corr.get(), x.get(), tp.get(), ts.get());
    }
};

/* A call to another process at `peer` ("host:port"; may be absent). */
class exit_span : public span
{
  public:
    explicit exit_span(const char *operation, const char *peer = nullptr) noexcept
    {
        sw_exit_span_begin(operation, peer);
    }
    explicit exit_span(std::string_view operation, std::string_view peer = {}) noexcept
    {
        detail::short_text op(operation), p(detail::optional(peer));
        sw_exit_span_begin(op.get(), p.get());
    }

    /* The sw8, sw8-correlation and sw8-x values to send with the outgoing request. */
    propagation_headers inject() const noexcept
    {
        propagation_headers h;
        h.status = sw_inject(h.sw8, sizeof h.sw8, h.correlation, sizeof h.correlation, h.sw8_x,
                             sizeof h.sw8_x);
        return h;
    }

    /* The traceparent and tracestate values to send with the outgoing request. */
    w3c_headers inject_w3c() const noexcept
    {
        w3c_headers h;
        h.status =
            sw_inject_w3c(h.traceparent, sizeof h.traceparent, h.tracestate, sizeof h.tracestate);
        return h;
    }
};

/* Work inside the process; with a snapshot, the continuation of a trace from another thread. */
class local_span : public span
{
  public:
    explicit local_span(const char *operation) noexcept
    {
        sw_local_span_begin(operation);
    }
    explicit local_span(std::string_view operation) noexcept
    {
        detail::short_text op(operation);
        sw_local_span_begin(op.get());
    }
    local_span(const char *operation, const snapshot &parent) noexcept : local_span(operation)
    {
        continue_from(parent);
    }
    local_span(std::string_view operation, const snapshot &parent) noexcept : local_span(operation)
    {
        continue_from(parent);
    }

  private:
    void continue_from(const snapshot &parent) noexcept
    {
        if (parent.captured()) {
            sw_continue(parent.get());
        }
    }
};

/*
 * A callable that runs `f` on whichever thread calls it inside a local span named `operation`
 * that continues the trace active where the traced_task was made (a CrossThread reference):
 *
 *     std::thread t(skywalking::traced("resize", resize_images), batch);
 *     auto n = std::async(std::launch::async, skywalking::traced("count", count_rows), table);
 *
 * Made outside any traced span, the task's span starts a trace of its own. The operation name
 * is copied (truncated to SW_CONFIG_NAME_MAX - 1 bytes); the snapshot is a plain value.
 */
template <class F> class traced_task
{
  public:
    traced_task(std::string_view operation, F f) noexcept(std::is_nothrow_move_constructible_v<F>)
        : f_(std::move(f)), parent_(snapshot::capture())
    {
        std::size_t len =
            operation.size() < sizeof operation_ ? operation.size() : sizeof operation_ - 1;
        if (len != 0) {
            std::memcpy(operation_, operation.data(), len);
        }
        operation_[len] = '\0';
    }

    template <class... Args>
    std::invoke_result_t<F &, Args...>
    operator()(Args &&...args) noexcept(std::is_nothrow_invocable_v<F &, Args...>)
    {
        local_span span(static_cast<const char *>(operation_), parent_);
        return std::invoke(f_, std::forward<Args>(args)...);
    }

  private:
    F f_;
    snapshot parent_;
    char operation_[SW_CONFIG_NAME_MAX];
};

/* Makes a traced_task of `f` (decay-copied or moved), capturing the calling thread's span. */
// clang-format 14 and 18 break this noexcept expression differently:
// clang-format off
template <class F>
traced_task<std::decay_t<F>>
traced(std::string_view operation,
       F &&f) noexcept(std::is_nothrow_constructible_v<std::decay_t<F>, F &&> &&
                       std::is_nothrow_move_constructible_v<std::decay_t<F>>)
// clang-format on
{
    return traced_task<std::decay_t<F>>(operation, std::decay_t<F>(std::forward<F>(f)));
}

/*
 * User meters (skywalking.h, sw_meter_*), as the Java toolkit's Counter, Gauge and Histogram:
 *
 *     auto orders = skywalking::counter::create("orders_total", {{"route", "/orders"}});
 *     orders.increment();
 *     auto latency = skywalking::histogram::create("order_ms", {0, 10, 50, 100});
 *     latency.add_value(42);
 *
 * A meter is a plain handle, valid for the rest of the process; copy it freely. When creation
 * failed (a bad name, SW_METER_MAX reached), error() says why and every call is a no-op. Names
 * and tags are copied (tags: at most SW_METER_TAGS_MAX, each truncated to the C API's limits).
 */
class meter
{
  public:
    using tag_list = std::initializer_list<std::pair<std::string_view, std::string_view>>;

    /* 0, or the SW_E* code of the failed creation. */
    int error() const noexcept
    {
        return rc_;
    }
    /* The current value (sw_meter_value); NaN for a failed meter. */
    double value() const noexcept
    {
        double v = 0;
        return sw_meter_value(m_, &v) == 0 ? v : std::numeric_limits<double>::quiet_NaN();
    }
    sw_meter_t *get() const noexcept
    {
        return m_;
    }

  protected:
    /* Calls make(name, tags, n) with NUL-terminated copies; n > SW_METER_TAGS_MAX: SW_EINVAL. */
    template <class Make> static meter made(std::string_view name, tag_list tags, Make make)
    {
        meter out;
        if (tags.size() > SW_METER_TAGS_MAX) {
            out.rc_ = SW_EINVAL;
            return out;
        }
        char text[SW_METER_TAGS_MAX][2][SW_METER_TAG_VALUE_MAX + 1];
        sw_kv_t kv[SW_METER_TAGS_MAX];
        std::size_t n = 0;
        for (const auto &tag : tags) {
            copy_to(text[n][0], tag.first);
            copy_to(text[n][1], tag.second);
            kv[n] = sw_kv_t{text[n][0], text[n][1]};
            n++;
        }
        char name_text[SW_METER_NAME_MAX + 2];
        copy_to(name_text, name);
        out.rc_ = make(name_text, n != 0 ? kv : nullptr, n, &out.m_);
        if (out.rc_ != 0) {
            out.m_ = nullptr;
        }
        return out;
    }

  private:
    template <std::size_t N> static void copy_to(char (&dst)[N], std::string_view text) noexcept
    {
        std::size_t len = text.size() < N ? text.size() : N - 1;
        if (len != 0) {
            std::memcpy(dst, text.data(), len);
        }
        dst[len] = '\0';
    }

    sw_meter_t *m_ = nullptr;
    int rc_ = SW_EINVAL;
};

class counter : public meter
{
  public:
    static counter create(std::string_view name, tag_list tags = {}) noexcept
    {
        return counter(made(name, tags, sw_meter_counter_new));
    }
    void increment(double delta = 1) const noexcept
    {
        sw_meter_counter_add(get(), delta);
    }

  private:
    explicit counter(meter m) noexcept : meter(m) {}
};

class gauge : public meter
{
  public:
    /* A gauge set with set(). */
    static gauge create(std::string_view name, tag_list tags = {}) noexcept
    {
        return gauge(made(name, tags, sw_meter_gauge_new));
    }
    /* A gauge whose value is supplier(opaque) at each report (see sw_meter_gauge_callback_new
       for the thread it runs on). */
    static gauge create(std::string_view name, double (*supplier)(void *), void *opaque,
                        tag_list tags = {}) noexcept
    {
        return gauge(made(name, tags,
                          [&](const char *n, const sw_kv_t *kv, std::size_t k, sw_meter_t **out) {
                              return sw_meter_gauge_callback_new(n, kv, k, supplier, opaque, out);
                          }));
    }
    void set(double value) const noexcept
    {
        sw_meter_gauge_set(get(), value);
    }

  private:
    explicit gauge(meter m) noexcept : meter(m) {}
};

class histogram : public meter
{
  public:
    /* `steps`: bucket lower bounds, ascending (sw_meter_histogram_new). */
    static histogram create(std::string_view name, std::initializer_list<double> steps,
                            tag_list tags = {}) noexcept
    {
        return histogram(made(
            name, tags, [&](const char *n, const sw_kv_t *kv, std::size_t k, sw_meter_t **out) {
                return sw_meter_histogram_new(n, kv, k, steps.begin(), steps.size(), out);
            }));
    }
    void add_value(double value) const noexcept
    {
        sw_meter_histogram_add(get(), value);
    }

  private:
    explicit histogram(meter m) noexcept : meter(m) {}
};

/*
 * Application logs to the OAP (skywalking.h, sw_log_kv): one line, with the trace context of
 * the thread's active span, queued for the agent's log sender.
 *
 *     skywalking::log(SW_SEVERITY_INFO, "order " + id + " placed");
 *     skywalking::log(SW_SEVERITY_WARN, "payment retried", "payments", {{"attempt", "2"}});
 *
 * The message, the logger (empty: "default") and the tags are copied for the call (the tags
 * into one malloc'd block when there are any). Returns what sw_log_kv returns, and SW_ENOMEM
 * when that block cannot be had (the line is not recorded then); a message without data (a
 * default-constructed std::string_view) is SW_EINVAL, as NULL is for the C function. Never
 * blocks; any thread.
 */
inline int
log(sw_log_severity_t severity, std::string_view message, std::string_view logger = {},
    std::initializer_list<std::pair<std::string_view, std::string_view>> tags = {}) noexcept
{
    detail::c_string<512> text(message);
    detail::short_text name(detail::optional(logger));
    if (tags.size() == 0) {
        return sw_log_kv(severity, name.get(), text.get(), nullptr, 0);
    }
    std::size_t bytes = tags.size() * sizeof(sw_kv_t);
    for (const auto &tag : tags) {
        bytes += tag.first.size() + tag.second.size() + 2;
    }
    void *block = std::malloc(bytes);
    if (block == nullptr) {
        return SW_ENOMEM;
    }
    sw_kv_t *kv = static_cast<sw_kv_t *>(block);
    char *next = reinterpret_cast<char *>(kv + tags.size());
    auto copy = [&next](std::string_view from) {
        char *to = next;
        if (!from.empty()) {
            std::memcpy(to, from.data(), from.size());
        }
        to[from.size()] = '\0';
        next += from.size() + 1;
        return to;
    };
    std::size_t n = 0;
    for (const auto &tag : tags) {
        kv[n].key = copy(tag.first);
        kv[n].value = copy(tag.second);
        n++;
    }
    int rc = sw_log_kv(severity, name.get(), text.get(), kv, n);
    std::free(block);
    return rc;
}

} // namespace skywalking

#endif /* SKYWALKING_HPP */
