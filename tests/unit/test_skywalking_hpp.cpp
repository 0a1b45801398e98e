/*
 * test_skywalking_hpp.cpp - the C++ API (agent/include/skywalking.hpp): guards end their span
 * at scope exit and mark it as an error only when an exception unwinds through the scope;
 * string_view arguments (long, not NUL-terminated, from std::string); traced() carries a trace
 * into std::thread and std::async; the header's functions are noexcept; context_span (request
 * contexts) ends its span when destroyed, in any order, once however often it is moved, and
 * attach_scope makes the stack API record into a request. Each test records to a private file
 * and reads it back with protobuf-c.
 */
#include <criterion/criterion.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <future>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <unistd.h>
#include <vector>

#include "skywalking.hpp"
#include "tracing.pb-c.h"

/* Used only in the unevaluated noexcept checks below; external so that clang does not flag them. */
void plain_task() noexcept;
void throwing_task();

namespace
{

using Segment = Skywalking__V3__SegmentObject;
using Span = Skywalking__V3__SpanObject;

/* Nothing the header offers throws (its only exceptions are the ones a traced callable throws). */
static_assert(noexcept(skywalking::local_span("x")));
static_assert(noexcept(skywalking::local_span(std::string_view("x"))));
static_assert(noexcept(skywalking::entry_span(std::string_view("x"), std::string_view())));
static_assert(noexcept(skywalking::exit_span("x", "peer")));
static_assert(noexcept(skywalking::snapshot::capture()));
static_assert(noexcept(skywalking::traced("x", plain_task)));
static_assert(noexcept(skywalking::traced("x", plain_task)()));
static_assert(!noexcept(skywalking::traced("x", throwing_task)()),
              "a task that may throw is not declared noexcept");
static_assert(!std::is_copy_constructible_v<skywalking::local_span>);
static_assert(!std::is_move_constructible_v<skywalking::exit_span>);

/* context_span moves without throwing and never copies; attach_scope stays where it was made. */
static_assert(std::is_nothrow_move_constructible_v<skywalking::context_span>);
static_assert(std::is_nothrow_move_assignable_v<skywalking::context_span>);
static_assert(!std::is_copy_constructible_v<skywalking::context_span>);
static_assert(!std::is_copy_assignable_v<skywalking::context_span>);
static_assert(noexcept(skywalking::context_span::begin_entry("x")));
static_assert(noexcept(skywalking::context_span::begin_entry(std::string_view("x"), {})));
static_assert(noexcept(std::declval<skywalking::context_span &>().exit_child("x", "peer")));
static_assert(!std::is_copy_constructible_v<skywalking::attach_scope>);
static_assert(!std::is_move_constructible_v<skywalking::attach_scope>);
static_assert(!std::is_move_assignable_v<skywalking::attach_scope>);
static_assert(!std::is_constructible_v<skywalking::attach_scope, skywalking::context_span &&>,
              "a temporary's span would end before the scope");

struct recording {
    char path[256];
};

/* `sample`: SW_AGENT_SAMPLE (-1: every trace). */
recording start_agent(uint32_t propagation = SW_PROPAGATION_SW8, int32_t sample = -1)
{
    recording r;
    char dir[] = "/tmp/sw-hpp-test-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    std::snprintf(r.path, sizeof r.path, "%s/segments.bin", dir);
    sw_config_t cfg;
    sw_config_init(&cfg);
    std::snprintf(cfg.file_path, sizeof cfg.file_path, "%s", r.path);
    std::snprintf(cfg.service_name, sizeof cfg.service_name, "hpp-service");
    std::snprintf(cfg.instance_name, sizeof cfg.instance_name, "hpp-instance");
    cfg.propagation = propagation;
    cfg.sample_n_per_3_secs = sample;
    int rc = sw_init(&cfg);
    cr_assert_eq(rc, 0, "sw_init: %s", sw_strerror(rc));
    return r;
}

/* Stops the agent, checks the accounting, and decodes every segment of the file. */
std::vector<Segment *> stop_and_read(const recording &r)
{
    cr_assert_eq(sw_shutdown(), 0);
    sw_stats_t st;
    sw_stats(&st);
    cr_assert_eq(st.segments_finished, st.segments_reported, "finished %llu, reported %llu",
                 (unsigned long long)st.segments_finished,
                 (unsigned long long)st.segments_reported);
    std::FILE *f = std::fopen(r.path, "rb");
    cr_assert_not_null(f, "no segment file %s", r.path);
    std::vector<unsigned char> bytes;
    unsigned char chunk[4096];
    for (std::size_t n; (n = std::fread(chunk, 1, sizeof chunk, f)) > 0;) {
        bytes.insert(bytes.end(), chunk, chunk + n);
    }
    std::fclose(f);
    std::vector<Segment *> out;
    std::size_t pos = 0;
    while (pos < bytes.size()) {
        std::uint64_t len = 0;
        for (int shift = 0;; shift += 7) {
            cr_assert_lt(pos, bytes.size(), "truncated length at %zu", pos);
            unsigned char b = bytes[pos++];
            len |= std::uint64_t(b & 0x7f) << shift;
            if (!(b & 0x80)) {
                break;
            }
        }
        cr_assert_leq(len, bytes.size() - pos, "truncated record at %zu", pos);
        Segment *s = skywalking__v3__segment_object__unpack(nullptr, len, &bytes[pos]);
        cr_assert_not_null(s, "undecodable record at %zu", pos);
        out.push_back(s);
        pos += len;
    }
    cr_assert_eq(out.size(), st.segments_reported);
    return out;
}

void free_all(std::vector<Segment *> &segments)
{
    for (Segment *s : segments) {
        skywalking__v3__segment_object__free_unpacked(s, nullptr);
    }
    segments.clear();
}

const Span *find_span(const std::vector<Segment *> &segments, std::string_view op,
                      const Segment **owner = nullptr)
{
    for (const Segment *s : segments) {
        for (std::size_t i = 0; i < s->n_spans; i++) {
            if (op == s->spans[i]->operationname) {
                if (owner != nullptr) {
                    *owner = s;
                }
                return s->spans[i];
            }
        }
    }
    cr_assert_fail("no span named '%.*s'", (int)op.size(), op.data());
    return nullptr;
}

const char *tag_value(const Span *span, const char *key)
{
    for (std::size_t i = 0; i < span->n_tags; i++) {
        if (std::strcmp(span->tags[i]->key, key) == 0) {
            return span->tags[i]->value;
        }
    }
    return nullptr;
}

/* The value of `key` in the span's first log that has it, or nullptr. */
const char *log_value(const Span *span, const char *key)
{
    for (std::size_t i = 0; i < span->n_logs; i++) {
        for (std::size_t k = 0; k < span->logs[i]->n_data; k++) {
            if (std::strcmp(span->logs[i]->data[k]->key, key) == 0) {
                return span->logs[i]->data[k]->value;
            }
        }
    }
    return nullptr;
}

sw_stats_t stats_now()
{
    sw_stats_t st;
    sw_stats(&st);
    return st;
}

/* The segment whose first span is named `op`. */
const Segment *segment_of(const std::vector<Segment *> &segments, std::string_view op)
{
    for (const Segment *s : segments) {
        if (s->n_spans > 0 && op == s->spans[0]->operationname) {
            return s;
        }
    }
    cr_assert_fail("no segment begins with '%.*s'", (int)op.size(), op.data());
    return nullptr;
}

void work_that_throws()
{
    skywalking::local_span inner("inner");
    inner.tag("stage", "before throw");
    throw std::runtime_error("disk on fire");
}

/* Opens a span in a destructor that runs during stack unwinding: not the span's exception. */
struct cleanup_with_span {
    ~cleanup_with_span()
    {
        skywalking::local_span cleanup("cleanup");
    }
};

} // namespace

Test(hpp, guards_build_the_tree_and_end_on_scope_exit)
{
    recording r = start_agent();
    std::string method = "GET";
    {
        skywalking::entry_span entry("GET /orders");
        cr_expect_eq(entry.tag(std::string("http.method"), method), 0);
        {
            skywalking::local_span local(std::string_view("validate"));
            skywalking::exit_span db("SELECT orders", std::string("db:5432"));
            cr_expect_eq(db.set_layer(SW_LAYER_DATABASE), 0);
            cr_expect_eq(db.set_component(5), 0);
        }
        skywalking::local_span after("render");
    }
    std::vector<Segment *> segments = stop_and_read(r);
    cr_assert_eq(segments.size(), 1);
    const Segment *seg = segments[0];
    cr_assert_eq(seg->n_spans, 4);
    const Span *entry = find_span(segments, "GET /orders");
    const Span *local = find_span(segments, "validate");
    const Span *db = find_span(segments, "SELECT orders");
    const Span *after = find_span(segments, "render");
    cr_expect_eq(entry->spantype, SKYWALKING__V3__SPAN_TYPE__Entry);
    cr_expect_eq(entry->parentspanid, -1);
    cr_expect_eq(local->parentspanid, entry->spanid);
    cr_expect_eq(db->parentspanid, local->spanid);
    cr_expect_eq(db->spantype, SKYWALKING__V3__SPAN_TYPE__Exit);
    cr_expect_str_eq(db->peer, "db:5432");
    cr_expect_eq(db->spanlayer, SKYWALKING__V3__SPAN_LAYER__Database);
    cr_expect_eq(db->componentid, 5);
    cr_expect_eq(after->parentspanid, entry->spanid, "render opened after validate ended");
    cr_expect_str_eq(tag_value(entry, "http.method"), "GET");
    for (std::size_t i = 0; i < seg->n_spans; i++) {
        cr_expect(!seg->spans[i]->iserror, "span %zu marked as an error", i);
    }
    free_all(segments);
}

Test(hpp, an_exception_unwinding_through_a_scope_marks_its_spans_as_errors)
{
    recording r = start_agent();
    bool caught = false;
    {
        skywalking::entry_span entry("POST /upload");
        try {
            skywalking::local_span outer("outer");
            work_that_throws();
        } catch (const std::runtime_error &) {
            caught = true;
        }
        /* Caught inside its own scope: this span saw no exception leave it. */
        skywalking::local_span handled("handled");
        try {
            throw std::logic_error("caught here");
        } catch (const std::logic_error &) {
        }
    }
    cr_assert(caught);
    std::vector<Segment *> segments = stop_and_read(r);
    cr_assert_eq(segments.size(), 1, "the unwound spans ended and the segment finished");
    const Span *inner = find_span(segments, "inner");
    const Span *outer = find_span(segments, "outer");
    cr_expect(inner->iserror);
    cr_expect(outer->iserror);
    cr_expect_str_eq(log_value(inner, "event"), "error");
    cr_expect_str_eq(log_value(inner, "error.kind"), "exception");
    cr_expect_str_eq(tag_value(inner, "stage"), "before throw");
    cr_expect_eq(outer->parentspanid, find_span(segments, "POST /upload")->spanid);
    cr_expect(!find_span(segments, "POST /upload")->iserror, "the exception was caught inside");
    cr_expect(!find_span(segments, "handled")->iserror);
    cr_expect_null(log_value(find_span(segments, "handled"), "event"));
    free_all(segments);
}

Test(hpp, a_span_opened_by_a_destructor_during_unwinding_is_not_an_error)
{
    recording r = start_agent();
    try {
        skywalking::local_span root("root");
        cleanup_with_span cleanup;
        throw 42;
    } catch (int) {
    }
    std::vector<Segment *> segments = stop_and_read(r);
    cr_expect(find_span(segments, "root")->iserror);
    cr_expect(!find_span(segments, "cleanup")->iserror,
              "the exception started before the cleanup span existed");
    free_all(segments);
}

/* Throws std::out_of_range and records it on `span` (a guard or a context_span). */
template <class S> void record_out_of_range(S &span)
{
    try {
        throw std::out_of_range("index 7 of 3");
    } catch (const std::exception &e) {
        cr_expect_eq(span.record_exception(e), 0);
    }
}

Test(hpp, record_exception_logs_type_and_message)
{
    recording r = start_agent();
    {
        skywalking::local_span span("parse");
        record_out_of_range(span);
    }
    {
        auto request = skywalking::context_span::begin_local("parse request");
        record_out_of_range(request);
    }
    std::vector<Segment *> segments = stop_and_read(r);
    for (const char *op : {"parse", "parse request"}) {
        const Span *span = find_span(segments, op);
        cr_expect(span->iserror, "%s", op);
        cr_expect_str_eq(log_value(span, "event"), "error");
        cr_expect_str_eq(log_value(span, "error.kind"), "std::out_of_range");
        cr_expect_str_eq(log_value(span, "message"), "index 7 of 3");
    }
    free_all(segments);
}

Test(hpp, string_views_are_passed_exactly_long_or_not_nul_terminated)
{
    recording r = start_agent();
    const char buffer[] = "op-one|op-two";
    std::string_view first(buffer, 6); /* "op-one", followed by '|' in memory */
    std::string long_op(700, 'x');     /* longer than the in-place buffer: heap copy */
    std::string long_value(300, 'v');
    {
        skywalking::local_span a(first);
        a.tag(std::string_view(buffer + 7, 3), std::string_view(buffer + 10, 3)); /* op-, two */
        skywalking::local_span b(long_op);
        b.log("long", long_value);
    }
    std::vector<Segment *> segments = stop_and_read(r);
    const Span *a = find_span(segments, "op-one");
    cr_expect_str_eq(tag_value(a, "op-"), "two");
    const Span *b = find_span(segments, long_op);
    cr_expect_str_eq(log_value(b, "long"), long_value.c_str());
    free_all(segments);
}

Test(hpp, exit_span_headers_continue_in_an_entry_span)
{
    recording r = start_agent();
    std::string sw8;
    {
        skywalking::entry_span root("client");
        skywalking::exit_span call("GET /next", "next:80");
        cr_expect_eq(call.correlation_set("tenant", std::string("t-1")), 0);
        skywalking::propagation_headers h = call.inject();
        cr_assert(h.ok(), "inject: %s", sw_err_name(h.status));
        sw8 = h.sw8;
        cr_expect_neq(std::strstr(h.correlation, ":"), nullptr);
    }
    {
        /* The downstream side, in the same process for the test. */
        skywalking::entry_span server(std::string_view("GET /next"), sw8);
    }
    std::vector<Segment *> segments = stop_and_read(r);
    cr_assert_eq(segments.size(), 2);
    const Segment *client_seg = nullptr, *server_seg = nullptr;
    find_span(segments, "client", &client_seg);
    const Span *server = nullptr;
    for (const Segment *s : segments) {
        if (s != client_seg) {
            server_seg = s;
        }
    }
    server = server_seg->spans[0];
    cr_assert_eq(server->n_refs, 1);
    cr_expect_eq(server->refs[0]->reftype, SKYWALKING__V3__REF_TYPE__CrossProcess);
    cr_expect_str_eq(server->refs[0]->parenttracesegmentid, client_seg->tracesegmentid);
    cr_expect_str_eq(server_seg->traceid, client_seg->traceid);
    free_all(segments);
}

Test(hpp, w3c_headers_continue_in_an_entry_span)
{
    recording r = start_agent(SW_PROPAGATION_TRACECONTEXT);
    std::string traceparent, tracestate;
    {
        skywalking::entry_span root("w3c-client");
        skywalking::exit_span call("GET /w3c", "w3c:80");
        skywalking::w3c_headers h = call.inject_w3c();
        cr_assert(h.ok(), "inject_w3c: %s", sw_err_name(h.status));
        traceparent = h.traceparent;
        tracestate = h.tracestate;
        cr_expect_eq(traceparent.size(), 55u);
        cr_expect_eq(tracestate.rfind("sw=", 0), 0u, "%s", h.tracestate);
    }
    {
        skywalking::entry_span server(std::string_view("GET /w3c"), {}, {}, {}, traceparent,
                                      tracestate);
    }
    std::vector<Segment *> segments = stop_and_read(r);
    cr_assert_eq(segments.size(), 2);
    const Segment *client_seg = nullptr;
    find_span(segments, "w3c-client", &client_seg);
    const Segment *server_seg = segments[0] == client_seg ? segments[1] : segments[0];
    cr_expect_str_eq(server_seg->traceid, client_seg->traceid);
    cr_expect_eq(traceparent.compare(3, 32, client_seg->traceid), 0);
    cr_assert_eq(server_seg->spans[0]->n_refs, 1);
    cr_expect_str_eq(server_seg->spans[0]->refs[0]->parenttracesegmentid,
                     client_seg->tracesegmentid);
    free_all(segments);
}

Test(hpp, traced_carries_the_trace_into_std_thread_and_std_async)
{
    recording r = start_agent();
    int async_result = 0;
    bool async_threw = false;
    {
        skywalking::entry_span root("batch");
        std::thread worker(skywalking::traced("thread work",
                                              [](int n) {
                                                  skywalking::local_span step("thread step");
                                                  step.tag("n", std::to_string(n));
                                              }),
                           7);
        worker.join();
        std::future<int> f = std::async(
            std::launch::async,
            skywalking::traced(std::string("async work"), [](int a, int b) { return a * b; }), 6,
            7);
        async_result = f.get();
        std::future<void> g = std::async(std::launch::async, skywalking::traced("async throws", [] {
                                             throw std::runtime_error("from the task");
                                         }));
        try {
            g.get();
        } catch (const std::runtime_error &) {
            async_threw = true;
        }
    }
    cr_expect_eq(async_result, 42);
    cr_expect(async_threw, "the task's exception reaches future::get unchanged");
    std::vector<Segment *> segments = stop_and_read(r);
    cr_assert_eq(segments.size(), 4, "the root's and one per task");
    const Segment *root_seg = nullptr;
    const Span *root = find_span(segments, "batch", &root_seg);
    for (const char *op : {"thread work", "async work", "async throws"}) {
        const Segment *seg = nullptr;
        const Span *task = find_span(segments, op, &seg);
        cr_assert_neq(seg, root_seg, "%s ran on another thread: its own segment", op);
        cr_assert_eq(task->n_refs, 1, "%s has a reference to its parent", op);
        cr_expect_eq(task->refs[0]->reftype, SKYWALKING__V3__REF_TYPE__CrossThread);
        cr_expect_str_eq(task->refs[0]->parenttracesegmentid, root_seg->tracesegmentid);
        cr_expect_eq(task->refs[0]->parentspanid, root->spanid);
        cr_expect_str_eq(seg->traceid, root_seg->traceid, "%s joined the trace", op);
    }
    cr_expect_str_eq(tag_value(find_span(segments, "thread step"), "n"), "7");
    cr_expect(find_span(segments, "async throws")->iserror);
    cr_expect(!find_span(segments, "async work")->iserror);
    free_all(segments);
}

Test(hpp, a_task_made_outside_a_trace_starts_its_own)
{
    recording r = start_agent();
    skywalking::snapshot none = skywalking::snapshot::capture();
    cr_expect(!none.captured());
    cr_expect_eq(none.status(), SW_ENOSPAN);
    std::thread t(skywalking::traced("orphan", [] {}));
    t.join();
    std::vector<Segment *> segments = stop_and_read(r);
    cr_assert_eq(segments.size(), 1);
    cr_expect_eq(find_span(segments, "orphan")->n_refs, 0);
    free_all(segments);
}

Test(hpp, guards_are_harmless_while_the_agent_is_off)
{
    cr_assert(!sw_enabled());
    skywalking::entry_span e("off", "not-a-valid-sw8");
    cr_expect_eq(e.tag("k", "v"), SW_ENOSPAN);
    skywalking::exit_span x(std::string_view("off"), std::string_view("peer:1"));
    cr_expect_eq(x.inject().status, SW_ENOSPAN);
    cr_expect(!x.capture().captured());
}

Test(hpp, meters_count_and_report_their_values)
{
    auto orders = skywalking::counter::create("hpp_orders", {{"route", std::string("/orders")}});
    cr_assert_eq(orders.error(), 0);
    std::thread a([&] {
        for (int i = 0; i < 1000; i++) {
            orders.increment();
        }
    });
    for (int i = 0; i < 1000; i++) {
        orders.increment(2);
    }
    a.join();
    cr_assert_eq(orders.value(), 3000.0);
    auto again = skywalking::counter::create("hpp_orders", {{"route", "/orders"}});
    cr_assert_eq(again.get(), orders.get(), "same name and tags: the same meter");

    auto latency = skywalking::histogram::create("hpp_latency", {0, 10, 100});
    cr_assert_eq(latency.error(), 0);
    latency.add_value(5);
    latency.add_value(10);
    latency.add_value(-1); /* below the first step: not counted */
    cr_assert_eq(latency.value(), 2.0);

    auto depth = skywalking::gauge::create("hpp_depth");
    depth.set(4.5);
    cr_assert_eq(depth.value(), 4.5);
    static double level = 9;
    auto supplied = skywalking::gauge::create(
        "hpp_level", [](void *p) { return *static_cast<double *>(p); }, &level);
    cr_assert_eq(supplied.value(), 9.0);

    auto bad = skywalking::counter::create("not a name");
    cr_assert_eq(bad.error(), SW_EINVAL);
    bad.increment(); /* a no-op */
    cr_assert(std::isnan(bad.value()));
    auto steps = skywalking::histogram::create("hpp_bad_steps", {5, 1});
    cr_assert_eq(steps.error(), SW_EINVAL);
}

/* ---- request contexts: context_span and attach_scope ---- */

Test(hpp, context_spans_end_when_destroyed_in_any_order)
{
    recording r = start_agent();
    sw_span_ref_t raw_entry, raw_local;
    {
        std::optional<skywalking::context_span> entry =
            skywalking::context_span::begin_entry("GET /any");
        cr_assert(entry->recorded(), "begin_entry: %s", sw_err_name(entry->status()));
        std::optional<skywalking::context_span> local = entry->local_child("local");
        skywalking::context_span exit = entry->exit_child("exit", "down:80");
        cr_assert(local->recorded());
        cr_assert(exit.recorded());
        raw_entry = entry->get();
        raw_local = local->get();

        entry.reset(); /* the parent first */
        cr_expect_eq(sw_span_ref_end(raw_entry), SW_ENOSPAN, "the entry ended when destroyed");
        cr_expect_eq(stats_now().segments_finished, 0u, "two spans are still open");
        local.reset();
        cr_expect_eq(sw_span_ref_end(raw_local), SW_ENOSPAN, "the local ended when destroyed");
        cr_expect_eq(stats_now().segments_finished, 0u, "the exit span is still open");
        cr_expect_eq(exit.tag("last", "yes"), 0);
    } /* the exit span, last */
    sw_stats_t st = stats_now();
    cr_expect_eq(st.segments_finished, 1u, "the last span's end finished the segment");
    cr_expect_eq(st.contexts_open, 0u);
    std::vector<Segment *> segments = stop_and_read(r);
    cr_assert_eq(segments.size(), 1);
    const Segment *seg = segment_of(segments, "GET /any");
    cr_assert_eq(seg->n_spans, 3);
    const Span *entry = find_span(segments, "GET /any");
    const Span *local = find_span(segments, "local");
    const Span *exit = find_span(segments, "exit");
    cr_expect_eq(entry->spantype, SKYWALKING__V3__SPAN_TYPE__Entry);
    cr_expect_eq(local->parentspanid, entry->spanid);
    cr_expect_eq(exit->parentspanid, entry->spanid);
    cr_expect_eq(exit->spantype, SKYWALKING__V3__SPAN_TYPE__Exit);
    cr_expect_str_eq(exit->peer, "down:80");
    cr_expect_str_eq(tag_value(exit, "last"), "yes");
    for (std::size_t i = 0; i < seg->n_spans; i++) {
        cr_expect_geq(seg->spans[i]->endtime, seg->spans[i]->starttime);
        cr_expect(!seg->spans[i]->iserror);
    }
    free_all(segments);
}

Test(hpp, moving_a_context_span_keeps_exactly_one_end)
{
    recording r = start_agent();
    skywalking::context_span root = skywalking::context_span::begin_local("moved root");
    const sw_span_ref_t raw = root.get();
    std::vector<skywalking::context_span> held;
    held.push_back(std::move(root));
    for (int i = 0; i < 16; i++) {
        held.emplace_back(); /* reallocations move the span again and destroy the old slots */
    }
    cr_expect(!root.open());
    cr_expect_null(root.get().context, "a moved-from object holds no span");
    cr_expect_eq(root.end(), SW_EINVAL);
    cr_expect_eq(root.tag("k", "v"), SW_EINVAL);
    skywalking::context_span other;
    other = std::move(held[0]); /* move assignment into an empty object */
    held.clear();
    skywalking::context_span &alias = other;
    other = std::move(alias); /* self-move: nothing happens */
    cr_expect(other.open());
    cr_expect_eq(other.tag("alive", "yes"), 0, "no moved-from object ended the span");
    sw_stats_t st = stats_now();
    cr_expect_eq(st.contexts_open, 1u);
    cr_expect_eq(st.segments_finished, 0u);

    /* Into a lambda run by another thread: the span ends there, when the lambda is destroyed. */
    std::thread worker(
        [span = std::move(other)]() mutable { cr_expect_eq(span.tag("thread", "worker"), 0); });
    worker.join();
    cr_expect_eq(sw_span_ref_end(raw), SW_ENOSPAN, "ended by the worker's copy of the lambda");
    cr_expect_eq(stats_now().segments_finished, 1u);

    skywalking::context_span once = skywalking::context_span::begin_local("ended once");
    cr_expect_eq(once.end(), 0);
    cr_expect_eq(once.end(), SW_ENOSPAN, "end() is idempotent");
    cr_expect(!once.open());
    cr_expect_eq(once.tag("after", "end"), SW_ENOSPAN, "its context is over: refused");

    /* Moving into an object that holds a span ends that span first. */
    skywalking::context_span replaced = skywalking::context_span::begin_local("replaced");
    const sw_span_ref_t raw_replaced = replaced.get();
    replaced = skywalking::context_span::begin_local("replacement");
    cr_expect_eq(sw_span_ref_end(raw_replaced), SW_ENOSPAN, "the overwritten span ended");
    cr_expect(replaced.open());
    replaced = skywalking::context_span();
    cr_expect_eq(stats_now().segments_finished, 4u);

    std::vector<Segment *> segments = stop_and_read(r);
    cr_assert_eq(segments.size(), 4);
    const Segment *moved = segment_of(segments, "moved root");
    cr_assert_eq(moved->n_spans, 1);
    cr_expect_str_eq(tag_value(moved->spans[0], "alive"), "yes");
    cr_expect_str_eq(tag_value(moved->spans[0], "thread"), "worker");
    segment_of(segments, "ended once");
    segment_of(segments, "replaced");
    segment_of(segments, "replacement");
    free_all(segments);
}

Test(hpp, a_child_of_a_moved_context_span_has_the_moved_span_as_parent)
{
    recording r = start_agent();
    {
        std::vector<skywalking::context_span> requests;
        requests.push_back(skywalking::context_span::begin_entry(std::string("GET /parent")));
        skywalking::context_span before = requests[0].local_child("before the move");
        skywalking::context_span parent = std::move(requests[0]);
        requests.clear();
        skywalking::context_span after = parent.exit_child("after the move", "down:80");
        skywalking::context_span grandchild = after.entry_child(std::string_view("grandchild"));
        cr_expect(after.recorded(), "exit_child: %s", sw_err_name(after.status()));
        cr_expect(grandchild.recorded());

        skywalking::context_span moved_from = std::move(parent);
        skywalking::context_span orphan = parent.local_child("orphan");
        cr_expect_eq(orphan.status(), SW_EINVAL, "a moved-from object is no parent");
        cr_expect_eq(orphan.tag("k", "v"), SW_ENOTRACED, "its child records nothing");
        cr_expect_eq(orphan.end(), 0, "and ends as a no-op");
    }
    std::vector<Segment *> segments = stop_and_read(r);
    cr_assert_eq(segments.size(), 1);
    cr_assert_eq(segments[0]->n_spans, 4, "no orphan span recorded");
    const Span *entry = find_span(segments, "GET /parent");
    const Span *after = find_span(segments, "after the move");
    cr_expect_eq(find_span(segments, "before the move")->parentspanid, entry->spanid);
    cr_expect_eq(after->parentspanid, entry->spanid);
    cr_expect_str_eq(after->peer, "down:80");
    const Span *grandchild = find_span(segments, "grandchild");
    cr_expect_eq(grandchild->parentspanid, after->spanid);
    cr_expect_eq(grandchild->spantype, SKYWALKING__V3__SPAN_TYPE__Entry);
    free_all(segments);
}

Test(hpp, attach_scope_makes_stack_api_spans_land_in_the_request)
{
    recording r = start_agent();
    {
        skywalking::local_span own("thread's own"); /* the thread has a trace of its own */
        skywalking::context_span request = skywalking::context_span::begin_entry("GET /evented");
        {
            skywalking::attach_scope attached(request);
            cr_assert_eq(attached.status(), 0, "attach: %s", sw_err_name(attached.status()));
            cr_expect(attached.attached());
            sw_exit_span_begin("SELECT", "db:5432"); /* what a preload plugin does */
            cr_expect_eq(sw_span_tag("db.statement", "SELECT 1"), 0);
            sw_span_end();
            {
                skywalking::exit_span cache("GET key", "cache:6379"); /* a C++ guard too */
                cr_expect(cache.inject().ok());
            }
            cr_expect_eq(request.end(), 0);
            cr_expect_eq(stats_now().segments_finished, 0u, "not reported while attached");
        }
        cr_expect_eq(stats_now().segments_finished, 1u, "the detach reported it");
        cr_expect_eq(sw_span_tag("own", "yes"), 0, "the thread's own span is active again");
    }
    std::vector<Segment *> segments = stop_and_read(r);
    cr_assert_eq(segments.size(), 2);
    const Segment *req = segment_of(segments, "GET /evented");
    const Segment *own = segment_of(segments, "thread's own");
    cr_assert_eq(req->n_spans, 3, "both stack-API spans are in the request's segment");
    cr_expect_str_eq(req->spans[1]->operationname, "SELECT");
    cr_expect_eq(req->spans[1]->parentspanid, 0);
    cr_expect_str_eq(tag_value(req->spans[1], "db.statement"), "SELECT 1");
    cr_expect_str_eq(req->spans[2]->operationname, "GET key");
    cr_expect_eq(req->spans[2]->parentspanid, 0);
    cr_expect_eq(own->n_spans, 1);
    cr_expect_str_eq(tag_value(own->spans[0], "own"), "yes");
    cr_expect_str_neq(own->traceid, req->traceid);
    free_all(segments);
}

/* Two requests interleaved on one thread, as an event loop runs them: spans begun and ended
   in mixed order, attach scopes nested across the two, each span in its own request. */
Test(hpp, spans_of_two_interleaved_requests_stay_in_their_own_segments)
{
    recording r = start_agent();
    {
        auto a = skywalking::context_span::begin_entry("A /req");
        auto b = skywalking::context_span::begin_entry("B /req");
        auto a_call = a.exit_child("A call", "down:1");
        auto b_work = b.local_child("B work");
        {
            skywalking::attach_scope in_a(a);
            skywalking::exit_span query("A query", "db:1");
            {
                skywalking::attach_scope in_b(b_work); /* B's callback inside A's */
                skywalking::exit_span nested("B query", "db:2");
            }
            skywalking::local_span resumed("A resumed");
        }
        cr_expect_eq(b_work.tag("request", "B"), 0);
        cr_expect_eq(a_call.tag("request", "A"), 0);
        b_work.end();
        a.end();
        auto b_late = b.exit_child("B late", "down:2");
        b.end();
        cr_expect_eq(stats_now().segments_finished, 0u);
        a_call.end(); /* A's last */
        cr_expect_eq(stats_now().segments_finished, 1u);
    } /* b_late: B's last */
    std::vector<Segment *> segments = stop_and_read(r);
    cr_assert_eq(segments.size(), 2);
    const Segment *a = segment_of(segments, "A /req");
    const Segment *b = segment_of(segments, "B /req");
    cr_expect_str_neq(a->traceid, b->traceid);
    cr_expect_eq(a->n_spans, 4);
    cr_expect_eq(b->n_spans, 4);
    for (const Segment *seg : {a, b}) {
        char request = seg->spans[0]->operationname[0];
        for (std::size_t i = 0; i < seg->n_spans; i++) {
            const Span *sp = seg->spans[i];
            cr_expect_eq(sp->operationname[0], request, "%s in request %c's segment",
                         sp->operationname, request);
        }
    }
    std::vector<Segment *> a_only = {const_cast<Segment *>(a)};
    std::vector<Segment *> b_only = {const_cast<Segment *>(b)};
    cr_expect_eq(find_span(a_only, "A query")->parentspanid, 0);
    cr_expect_eq(find_span(a_only, "A resumed")->parentspanid, find_span(a_only, "A query")->spanid,
                 "A's active span came back after B's");
    cr_expect_str_eq(tag_value(find_span(a_only, "A call"), "request"), "A");
    const Span *b_work = find_span(b_only, "B work");
    cr_expect_eq(find_span(b_only, "B query")->parentspanid, b_work->spanid);
    cr_expect_str_eq(tag_value(b_work, "request"), "B");
    cr_expect_eq(find_span(b_only, "B late")->parentspanid, 0);
    free_all(segments);
}

Test(hpp, context_span_headers_and_snapshots_join_the_trace)
{
    recording r = start_agent(SW_PROPAGATION_SW8_TRACECONTEXT);
    {
        auto client = skywalking::context_span::begin_local("client");
        auto call = client.exit_child("GET /next", "next:80");
        cr_expect_eq(client.inject().status, SW_ENOTEXIT);
        skywalking::propagation_headers h = call.inject();
        cr_assert(h.ok(), "inject: %s", sw_err_name(h.status));
        skywalking::w3c_headers w = call.inject_w3c();
        cr_assert(w.ok(), "inject_w3c: %s", sw_err_name(w.status));

        skywalking::incoming_headers by_sw8;
        by_sw8.sw8 = h.sw8;
        by_sw8.sw8_x = h.sw8_x;
        auto server = skywalking::context_span::begin_entry("sw8 server", by_sw8);
        skywalking::incoming_headers by_w3c;
        by_w3c.traceparent = w.traceparent;
        by_w3c.tracestate = w.tracestate;
        auto w3c_server = skywalking::context_span::begin_entry("w3c server", by_w3c);

        skywalking::snapshot snap = server.capture();
        cr_assert(snap.captured(), "capture: %s", sw_err_name(snap.status()));
        auto job = skywalking::context_span::begin_local("job", snap);
        auto later = skywalking::context_span::begin_local("later");
        cr_expect_eq(later.continue_from(snap), 0);
    }
    std::vector<Segment *> segments = stop_and_read(r);
    cr_assert_eq(segments.size(), 5);
    const Segment *client = segment_of(segments, "client");
    for (const char *op : {"sw8 server", "w3c server"}) {
        const Segment *server = segment_of(segments, op);
        cr_expect_str_eq(server->traceid, client->traceid, "%s joined the trace", op);
        cr_assert_eq(server->spans[0]->n_refs, 1, "%s", op);
        const auto *ref = server->spans[0]->refs[0];
        cr_expect_eq(ref->reftype, SKYWALKING__V3__REF_TYPE__CrossProcess);
        cr_expect_str_eq(ref->parenttracesegmentid, client->tracesegmentid);
        cr_expect_eq(ref->parentspanid, 1, "%s: the ref names the exit span", op);
    }
    const Segment *server = segment_of(segments, "sw8 server");
    for (const char *op : {"job", "later"}) {
        const Segment *seg = segment_of(segments, op);
        cr_expect_str_eq(seg->traceid, client->traceid, "%s joined the trace", op);
        cr_assert_eq(seg->spans[0]->n_refs, 1, "%s", op);
        cr_expect_eq(seg->spans[0]->refs[0]->reftype, SKYWALKING__V3__REF_TYPE__CrossThread);
        cr_expect_str_eq(seg->spans[0]->refs[0]->parenttracesegmentid, server->tracesegmentid);
    }
    free_all(segments);
}

Test(hpp, a_context_span_destroyed_by_unwinding_is_an_error)
{
    recording r = start_agent();
    std::vector<skywalking::context_span> kept;
    try {
        auto doomed = skywalking::context_span::begin_local("doomed");
        kept.push_back(skywalking::context_span::begin_local("kept"));
        throw std::runtime_error("request failed");
    } catch (const std::runtime_error &) {
    }
    kept.clear(); /* outside the unwinding: no error */
    std::vector<Segment *> segments = stop_and_read(r);
    const Span *doomed = find_span(segments, "doomed");
    cr_expect(doomed->iserror);
    cr_expect_str_eq(log_value(doomed, "event"), "error");
    cr_expect_str_eq(log_value(doomed, "error.kind"), "exception");
    cr_expect(!find_span(segments, "kept")->iserror);
    cr_expect_null(log_value(find_span(segments, "kept"), "event"));
    free_all(segments);
}

Test(hpp, context_spans_are_harmless_while_the_agent_is_off)
{
    cr_assert(!sw_enabled());
    auto request = skywalking::context_span::begin_entry("off");
    cr_expect_eq(request.status(), SW_ENOTRACED);
    cr_expect(!request.recorded());
    auto child = request.exit_child("child", "peer:1");
    cr_expect_eq(child.status(), SW_ENOTRACED);
    cr_expect_eq(child.tag("k", "v"), SW_ENOTRACED);
    cr_expect_eq(child.inject().status, SW_ENOTRACED);
    {
        skywalking::attach_scope attached(request);
        cr_expect_eq(attached.status(), SW_ENOTRACED);
        cr_expect(!attached.attached());
        skywalking::exit_span inside("inside", "z:1");
        cr_expect_eq(inside.tag("k", "v"), SW_ENOSPAN, "the stack API records nothing");
    }
    cr_expect_eq(child.end(), 0);
    cr_expect_eq(request.end(), 0);
}

Test(hpp, an_unsampled_request_attached_records_nothing)
{
    recording r = start_agent(SW_PROPAGATION_SW8, 1);
    {
        auto sampled = skywalking::context_span::begin_entry("sampled");
        cr_assert(sampled.recorded(), "one trace per 3 s is sampled");
        auto unsampled = skywalking::context_span::begin_entry("unsampled");
        cr_assert_eq(unsampled.status(), SW_ENOTRACED);
        skywalking::attach_scope attached(unsampled);
        cr_expect_eq(attached.status(), SW_ENOTRACED);
        skywalking::exit_span inside("inside", "z:1");
        cr_expect_eq(inside.tag("k", "v"), SW_ENOTRACED, "the stack API records nothing");
    }
    cr_expect_eq(stats_now().traces_sampled_out, 1u);
    std::vector<Segment *> segments = stop_and_read(r);
    cr_assert_eq(segments.size(), 1);
    cr_expect_eq(segment_of(segments, "sampled")->n_spans, 1, "nothing else joined it");
    free_all(segments);
}
