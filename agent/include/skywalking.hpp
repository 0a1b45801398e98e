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
 * Request contexts. For event loops and requests that hop between threads, context_span holds
 * one span of a request context (skywalking.h "Request contexts") as an object that moves and
 * ends its span when destroyed, in any order; attach_scope makes such a request the thread's
 * active trace for a scope, so that the guards and the LD_PRELOAD plugins record into it:
 *
 *     auto request = skywalking::context_span::begin_entry("GET /orders", incoming);
 *     auto cache = request.exit_child("GET", "cache:6379");    // keep both in the request
 *     {
 *         skywalking::attach_scope attached(request);
 *         skywalking::exit_span db("SELECT orders", "db:5432"); // a span of `request`
 *     }
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
#include <iterator>
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

/* The log of a span ended by stack unwinding (an exception left the scope that ended it). */
inline constexpr sw_kv_t unwound_log[] = {{"event", "error"},
                                          {"error.kind", "exception"},
                                          {"message", "an exception left the span's scope"}};

/* Logs a caught exception as the Java agent logs a Throwable, through `log(kvs, n)`:
   event=error, error.kind=<the exception's dynamic type, demangled where the C++ ABI offers
   it>, message=what(). Returns what `log` returns. */
template <class Log> int log_exception(const std::exception &e, Log log) noexcept
{
    const char *kind = typeid(e).name();
#if SKYWALKING_HPP_HAVE_CXXABI
    int status = -1;
    char *demangled = abi::__cxa_demangle(kind, nullptr, nullptr, &status);
    if (status == 0 && demangled != nullptr) {
        kind = demangled;
    }
#endif
    const sw_kv_t kvs[] = {{"event", "error"}, {"error.kind", kind}, {"message", e.what()}};
    int rc = log(kvs, std::size_t(3));
#if SKYWALKING_HPP_HAVE_CXXABI
    std::free(demangled); /* __cxa_demangle allocates with malloc */
#endif
    return rc;
}

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

    /* Captures a span of a request context (sw_span_ref_capture; see context_span::capture).
       status() is 0 or one of the codes that function's comment lists. */
    static snapshot capture(sw_span_ref_t span) noexcept
    {
        snapshot s;
        s.status_ = sw_span_ref_capture(span, &s.snap_);
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
    /* 0, SW_ENOSPAN, SW_ENOTEXIT, SW_ENOTRACED (send no sw8); from a context_span also
       SW_EINVAL or SW_EBUSY (see sw_span_ref_inject). */
    int status = SW_ENOSPAN;
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
    /* 0, SW_ENOSPAN, SW_ENOTEXIT, SW_ENOTRACED (send none); from a context_span also
       SW_EINVAL or SW_EBUSY. */
    int status = SW_ENOSPAN;
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
        return detail::log_exception(e, sw_span_log);
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
            sw_span_log(detail::unwound_log, std::size(detail::unwound_log));
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
 * Request contexts (skywalking.h "Request contexts"): spans the program holds as objects, for
 * event loops that interleave requests on one thread and requests that move between threads.
 *
 *     struct request_state {                        // the program's per-request state
 *         skywalking::context_span entry, cache;
 *     };
 *     skywalking::incoming_headers in;
 *     in.sw8 = header_of(req, "sw8");               // absent headers stay empty
 *     state->entry = skywalking::context_span::begin_entry("GET /orders", in);
 *     state->cache = state->entry.exit_child("GET", "cache:6379");
 *     send_with_sw8(state->cache.inject().sw8);
 *     ... a later callback, maybe on another thread ...
 *     state->cache.end();                           // or let it end with the state
 *     delete state;                                 // entry ends: the segment is reported
 *
 * context_span owns one span of a request context (an sw_span_ref_t). It begins a new context
 * (begin_entry, begin_local, begin_exit) or a span under another context_span (entry_child,
 * local_child, exit_child), and ends its span when it is destroyed, unless end() ended it
 * before. Spans end in any order; the context reports its segment when its last span ends. A
 * context_span moves (into a container, a callback's state, a lambda, another thread) and
 * cannot be copied, so exactly one object ends each span. A moved-from or default-constructed
 * context_span holds no span: its calls return SW_EINVAL and its destruction does nothing.
 * Moving a context_span into one that holds a span ends that span first, as its destructor
 * would. Self-move does nothing.
 *
 * Destroyed by stack unwinding that began after it was made (an exception left the scope that
 * owned it), a context_span marks its span as an error and logs it as the guards do.
 *
 * Setters act on the object's own span, whichever span is the thread's active one, and return
 * what the sw_span_ref_* function they call returns (skywalking.h lists the codes: SW_ENOTRACED
 * for a span that is not recorded, as when the agent is off, SW_ENOSPAN once the context
 * ended, SW_EBUSY while another thread has it attached). As in the C API, a span that ended
 * may still be tagged while its context is open.
 *
 * Threads: a context is used by one thread at a time and may move to another thread between
 * calls; the program's own hand-off (a queue, a thread's start) orders them. After sw_shutdown,
 * a context_span whose span is still open may be ended or destroyed (that frees what is left of
 * the context, and reports nothing); one whose span ended must only be destroyed.
 */

/* Incoming propagation header values of a request (each may be empty: absent), read as
   sw_entry_span_begin_w3c reads them; SW_AGENT_PROPAGATION decides which count. */
struct incoming_headers {
    std::string_view sw8;
    std::string_view sw8_correlation;
    std::string_view sw8_x;
    std::string_view traceparent;
    std::string_view tracestate;
};

class context_span
{
  public:
    /* Holds no span (a place to move one into). */
    context_span() noexcept = default;

    ~context_span()
    {
        finish();
    }

    context_span(context_span &&other) noexcept
        : ref_(other.ref_), status_(other.status_), open_(other.open_),
          exceptions_at_begin_(other.exceptions_at_begin_)
    {
        other.forget();
    }

    /* Ends the span this object holds (as its destructor would), then takes other's. */
    context_span &operator=(context_span &&other) noexcept
    {
        if (this != &other) {
            finish();
            ref_ = other.ref_;
            status_ = other.status_;
            open_ = other.open_;
            exceptions_at_begin_ = other.exceptions_at_begin_;
            other.forget();
        }
        return *this;
    }

    context_span(const context_span &) = delete;
    context_span &operator=(const context_span &) = delete;

    /* A new context whose first span is an entry span continuing the incoming headers
       (sw_context_begin_entry; nullptr or empty members: none). status() says whether the
       context is recorded. */
    static context_span begin_entry(const char *operation,
                                    const sw_headers_t *incoming = nullptr) noexcept
    {
        return context_span(begun, [&](sw_span_ref_t *out) {
            return sw_context_begin_entry(operation, incoming, out);
        });
    }
    static context_span begin_entry(std::string_view operation,
                                    const incoming_headers &incoming = {}) noexcept
    {
        detail::short_text op(operation);
        detail::header_text sw8(detail::optional(incoming.sw8));
        detail::header_text corr(detail::optional(incoming.sw8_correlation));
        detail::short_text x(detail::optional(incoming.sw8_x));
        detail::short_text tp(detail::optional(incoming.traceparent));
        detail::header_text ts(detail::optional(incoming.tracestate));
        const sw_headers_t in = {sw8.get(), corr.get(), x.get(), tp.get(), ts.get()};
        return begin_entry(op.get(), &in);
    }

    /* A new context whose first span is a local span (sw_context_begin_local). */
    static context_span begin_local(const char *operation) noexcept
    {
        return context_span(
            begun, [&](sw_span_ref_t *out) { return sw_context_begin_local(operation, out); });
    }
    static context_span begin_local(std::string_view operation) noexcept
    {
        detail::short_text op(operation);
        return begin_local(op.get());
    }
    /* ... continuing `parent` (captured on another thread or from another context) with a
       CrossThread reference; a parent not captured starts a trace of its own. */
    static context_span begin_local(const char *operation, const snapshot &parent) noexcept
    {
        context_span s = begin_local(operation);
        if (parent.captured()) {
            s.continue_from(parent);
        }
        return s;
    }
    static context_span begin_local(std::string_view operation, const snapshot &parent) noexcept
    {
        detail::short_text op(operation);
        return begin_local(op.get(), parent);
    }

    /* A new context whose first span is an exit span to `peer` (may be absent). */
    static context_span begin_exit(const char *operation, const char *peer = nullptr) noexcept
    {
        return context_span(
            begun, [&](sw_span_ref_t *out) { return sw_context_begin_exit(operation, peer, out); });
    }
    static context_span begin_exit(std::string_view operation, std::string_view peer = {}) noexcept
    {
        detail::short_text op(operation), p(detail::optional(peer));
        return begin_exit(op.get(), p.get());
    }

    /* A span of this span's context with this span as its parent (sw_span_ref_begin_*; this
       span may have ended, its context must not have). status() is SW_ENOTRACED past the span
       limit or in a context that is not recorded, SW_EINVAL on an object holding no span. */
    context_span entry_child(const char *operation) const noexcept
    {
        return child(sw_span_ref_begin_entry, operation);
    }
    context_span entry_child(std::string_view operation) const noexcept
    {
        detail::short_text op(operation);
        return child(sw_span_ref_begin_entry, op.get());
    }
    context_span local_child(const char *operation) const noexcept
    {
        return child(sw_span_ref_begin_local, operation);
    }
    context_span local_child(std::string_view operation) const noexcept
    {
        detail::short_text op(operation);
        return child(sw_span_ref_begin_local, op.get());
    }
    context_span exit_child(const char *operation, const char *peer = nullptr) const noexcept
    {
        return context_span(begun, [&](sw_span_ref_t *out) {
            return sw_span_ref_begin_exit(ref_, operation, peer, out);
        });
    }
    context_span exit_child(std::string_view operation, std::string_view peer = {}) const noexcept
    {
        detail::short_text op(operation), p(detail::optional(peer));
        return exit_child(op.get(), p.get());
    }

    /* Ends the span now and returns what sw_span_ref_end returns (SW_OK also for a span that
       is not recorded). Later calls and the destructor do nothing: they return SW_ENOSPAN, and
       SW_EINVAL on an object that holds no span. */
    int end() noexcept
    {
        if (!open_) {
            return ref_.context == nullptr ? SW_EINVAL : SW_ENOSPAN;
        }
        open_ = false;
        return sw_span_ref_end(ref_);
    }

    int tag(const char *key, const char *value) noexcept
    {
        return sw_span_ref_tag(ref_, key, value);
    }
    int tag(std::string_view key, std::string_view value) noexcept
    {
        detail::short_text k(key), v(value);
        return sw_span_ref_tag(ref_, k.get(), v.get());
    }

    /* A log with one key/value pair (an event at the current time). */
    int log(const char *key, const char *value) noexcept
    {
        const sw_kv_t kv = {key, value};
        return sw_span_ref_log(ref_, &kv, 1);
    }
    int log(std::string_view key, std::string_view value) noexcept
    {
        detail::short_text k(key), v(value);
        return log(k.get(), v.get());
    }
    /* A log of n pairs, as sw_span_ref_log. */
    int log(const sw_kv_t *kvs, std::size_t n) noexcept
    {
        return sw_span_ref_log(ref_, kvs, n);
    }

    /* Marks the span as an error and logs a caught exception (see span::record_exception). */
    int record_exception(const std::exception &e) noexcept
    {
        sw_span_ref_set_error(ref_, true);
        return detail::log_exception(
            e, [this](const sw_kv_t *kvs, std::size_t n) { return sw_span_ref_log(ref_, kvs, n); });
    }

    int set_error(bool is_error = true) noexcept
    {
        return sw_span_ref_set_error(ref_, is_error);
    }
    int set_component(std::int32_t component_id) noexcept
    {
        return sw_span_ref_set_component(ref_, component_id);
    }
    int set_layer(sw_layer_t layer) noexcept
    {
        return sw_span_ref_set_layer(ref_, layer);
    }
    int set_peer(const char *peer) noexcept
    {
        return sw_span_ref_set_peer(ref_, peer);
    }
    int set_peer(std::string_view peer) noexcept
    {
        detail::short_text p(peer);
        return sw_span_ref_set_peer(ref_, p.get());
    }

    /* The sw8, sw8-correlation and sw8-x values to send from this exit span
       (sw_span_ref_inject; status SW_ENOTEXIT for another kind of span). */
    propagation_headers inject() const noexcept
    {
        propagation_headers h;
        h.status = sw_span_ref_inject(ref_, h.sw8, sizeof h.sw8, h.correlation,
                                      sizeof h.correlation, h.sw8_x, sizeof h.sw8_x);
        return h;
    }

    /* The traceparent and tracestate values to send from this exit span. */
    w3c_headers inject_w3c() const noexcept
    {
        w3c_headers h;
        h.status = sw_span_ref_inject_w3c(ref_, h.traceparent, sizeof h.traceparent, h.tracestate,
                                          sizeof h.tracestate);
        return h;
    }

    /* This span as the parent of work in another context or on another thread: hand the
       snapshot to begin_local(operation, snapshot), continue_from() or traced work. */
    snapshot capture() const noexcept
    {
        return snapshot::capture(ref_);
    }

    /* Records a CrossThread reference to `parent` on this span (sw_span_ref_continue). */
    int continue_from(const snapshot &parent) noexcept
    {
        return sw_span_ref_continue(ref_, parent.get());
    }

    /* What the begin function returned: SW_OK (recorded), SW_ENOTRACED (not recorded: agent
       off, not sampled, ignored, past the span limit; every call is then a harmless no-op),
       SW_EINVAL or SW_ENOSPAN (a bad or ended parent), SW_EBUSY. SW_EINVAL when it holds no
       span because it was default-constructed or moved from. */
    int status() const noexcept
    {
        return status_;
    }
    bool recorded() const noexcept
    {
        return status_ == SW_OK;
    }
    /* Whether this object still has a span to end. */
    bool open() const noexcept
    {
        return open_;
    }

    /* The reference, for the C API (sw_context_attach, sw_span_ref_* calls); still owned. */
    sw_span_ref_t get() const noexcept
    {
        return ref_;
    }

    /* Gives the span up without ending it: the caller ends it with sw_span_ref_end. The object
       then holds no span. */
    sw_span_ref_t release() noexcept
    {
        sw_span_ref_t r = ref_;
        forget();
        return r;
    }

  private:
    struct begun_t {
    };
    static constexpr begun_t begun{};

    /* Runs begin(&ref_), one of the C functions that write a reference in every case. */
    template <class Begin>
    context_span(begun_t, Begin begin) noexcept
        : status_(begin(&ref_)), open_(true), exceptions_at_begin_(std::uncaught_exceptions())
    {
    }

    /* An entry or local child: `begin` is sw_span_ref_begin_entry or _local. */
    context_span child(int (*begin)(sw_span_ref_t, const char *, sw_span_ref_t *),
                       const char *operation) const noexcept
    {
        return context_span(begun, [&](sw_span_ref_t *out) { return begin(ref_, operation, out); });
    }

    void forget() noexcept
    {
        ref_ = sw_span_ref_t{nullptr, 0, -1};
        status_ = SW_EINVAL;
        open_ = false;
    }

    /* The destructor's end: an exception that began unwinding after the span began marks it. */
    void finish() noexcept
    {
        if (!open_) {
            return;
        }
        if (std::uncaught_exceptions() > exceptions_at_begin_) {
            sw_span_ref_set_error(ref_, true);
            sw_span_ref_log(ref_, detail::unwound_log, std::size(detail::unwound_log));
        }
        end();
    }

    sw_span_ref_t ref_ = {nullptr, 0, -1};
    int status_ = SW_EINVAL;
    bool open_ = false;
    int exceptions_at_begin_ = 0;
};

/*
 * Makes a request context the calling thread's active trace for the length of a scope
 * (sw_context_attach, then sw_context_detach in the destructor), so that code using the stack
 * API on this thread records into the request, under the given span: the guards above,
 * sw_exit_span_begin ... sw_span_end, sw_inject, and with the LD_PRELOAD library loaded, a
 * libpq, hiredis or libcurl call made inside an event-loop callback.
 *
 *     void on_readable(request_state *state)
 *     {
 *         skywalking::attach_scope attached(state->entry);
 *         redisCommand(redis, "GET %s", key);   // an exit span of state's request
 *     }                                         // the thread's own spans are active again
 *
 * status() is what sw_context_attach returned: SW_OK; SW_ENOTRACED (the context is not
 * recorded: the stack API records nothing in the scope); SW_EINVAL, SW_ENOSPAN or SW_EBUSY
 * (attached on another thread): not attached, the stack API acts on the thread's own spans as
 * before. Spans begun through the stack API in the scope must end in it (a guard does). The
 * context is not reported while attached, even when all its spans ended. Scopes nest; they
 * cannot be copied or moved and must be destroyed on the thread that made them, in reverse
 * order, which a scope does. A temporary context_span cannot be attached (its span would end
 * before the scope does).
 */
class attach_scope
{
  public:
    explicit attach_scope(const context_span &span) noexcept : attach_scope(span.get()) {}
    explicit attach_scope(sw_span_ref_t span) noexcept : status_(sw_context_attach(span, &saved_))
    {
    }
    attach_scope(context_span &&) = delete;

    ~attach_scope()
    {
        if (status_ == SW_OK || status_ == SW_ENOTRACED) {
            sw_context_detach(&saved_);
        }
    }

    attach_scope(const attach_scope &) = delete;
    attach_scope &operator=(const attach_scope &) = delete;
    attach_scope(attach_scope &&) = delete;
    attach_scope &operator=(attach_scope &&) = delete;

    int status() const noexcept
    {
        return status_;
    }
    /* Whether the request's context is the thread's active trace in the scope. */
    bool attached() const noexcept
    {
        return status_ == SW_OK;
    }

  private:
    sw_attach_t saved_; /* written by sw_context_attach */
    int status_;
};

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
