/*
 * gs_client.cpp - an ordinary gRPC C++ client (Debian's libgrpc++) for the span tests, run under
 * libskywalking-preload.so. It uses skywalking.h only in the scenario "parent" (a local span
 * around the call, to check that the call's exit span joins the thread's trace).
 *
 *   gs_client TARGET SCENARIO [ARG]
 *
 * Scenarios: unary, fail (expects NOT_FOUND), stream (three messages both ways), hop ARG
 * (Hop through the server at TARGET to ARG), parent (unary under a local span), badsw8 and
 * hugesw8 (unary with the program's own malformed, or 6000-byte, sw8 metadata), callback (unary
 * through the callback API), async (unary
 * through a CompletionQueue drained by another thread), unreachable (expects UNAVAILABLE). Exits 0
 * when the call ended as the scenario expects; prints what went wrong otherwise.
 */
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <iostream>
#include <memory>
#include <string>
#include <thread>

#include "gs_echo.grpc.pb.h"
#include "skywalking.h"

namespace
{

bool expect(const grpc::Status &st, grpc::StatusCode want, const char *what)
{
    if (st.error_code() != want) {
        std::cerr << "gs_client " << what << ": status " << st.error_code() << " ("
                  << st.error_message() << "), expected " << want << "\n";
        return false;
    }
    return true;
}

void deadline(grpc::ClientContext &ctx)
{
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
}

bool unary(gs::Echo::Stub &stub, const char *text, const char *own_sw8 = nullptr)
{
    grpc::ClientContext ctx;
    deadline(ctx);
    if (own_sw8 != nullptr) {
        ctx.AddMetadata("sw8", own_sw8);
    }
    gs::Msg in, out;
    in.set_text(text);
    grpc::Status st = stub.Unary(&ctx, in, &out);
    return expect(st, grpc::StatusCode::OK, "unary") && out.text() == text;
}

bool stream(gs::Echo::Stub &stub)
{
    grpc::ClientContext ctx;
    deadline(ctx);
    auto s = stub.Stream(&ctx);
    gs::Msg m, back;
    int echoed = 0;
    for (int i = 0; i < 3; i++) {
        m.set_text("m" + std::to_string(i));
        if (!s->Write(m) || !s->Read(&back) || back.text() != m.text()) {
            break;
        }
        echoed++;
    }
    s->WritesDone();
    return expect(s->Finish(), grpc::StatusCode::OK, "stream") && echoed == 3;
}

bool async_unary(gs::Echo::Stub &stub)
{
    grpc::CompletionQueue cq;
    grpc::ClientContext ctx;
    deadline(ctx);
    gs::Msg in, out;
    in.set_text("async");
    grpc::Status st;
    auto rpc = stub.AsyncUnary(&ctx, in, &cq);
    rpc->Finish(&out, &st, reinterpret_cast<void *>(1));
    bool ok = false;
    std::thread drain([&] {
        void *tag;
        bool done;
        ok = cq.Next(&tag, &done) && done && tag == reinterpret_cast<void *>(1);
    });
    drain.join();
    cq.Shutdown();
    return ok && expect(st, grpc::StatusCode::OK, "async") && out.text() == "async";
}

/* Unary through the callback API (stub->async()): the status arrives in a callback on a
   thread of the library's. */
bool callback_unary(gs::Echo::Stub &stub)
{
    grpc::ClientContext ctx;
    deadline(ctx);
    gs::Msg in, out;
    in.set_text("callback");
    std::mutex m;
    std::condition_variable cv;
    bool done = false;
    grpc::Status st;
    stub.async()->Unary(&ctx, &in, &out, [&](grpc::Status s) {
        std::lock_guard<std::mutex> lock(m);
        st = std::move(s);
        done = true;
        cv.notify_one();
    });
    std::unique_lock<std::mutex> lock(m);
    if (!cv.wait_for(lock, std::chrono::seconds(60), [&] { return done; })) {
        std::cerr << "gs_client callback: no answer within 60 s\n";
        return false;
    }
    return expect(st, grpc::StatusCode::OK, "callback") && out.text() == "callback";
}

} // namespace

int main(int argc, char **argv)
{
    if (argc < 3) {
        std::cerr << "usage: gs_client TARGET SCENARIO [ARG]\n";
        return 2;
    }
    std::string scenario = argv[2];
    auto stub = gs::Echo::NewStub(grpc::CreateChannel(argv[1], grpc::InsecureChannelCredentials()));
    bool ok = false;
    if (scenario == "unary") {
        ok = unary(*stub, "hello");
    } else if (scenario == "badsw8") {
        ok = unary(*stub, "bad", "1-not-base64-%%%-x");
    } else if (scenario == "hugesw8") { /* longer than any sw8 an agent writes */
        ok = unary(*stub, "huge", std::string(6000, 'A').c_str());
    } else if (scenario == "parent") {
        sw_init(nullptr); /* the preload's agent, configured from the environment */
        sw_local_span_begin("client-main");
        ok = unary(*stub, "child");
        sw_span_end();
        sw_shutdown();
    } else if (scenario == "fail" || scenario == "unreachable") {
        grpc::ClientContext ctx;
        deadline(ctx);
        gs::Msg in, out;
        grpc::Status st = stub->Fail(&ctx, in, &out);
        ok = expect(
            st, scenario == "fail" ? grpc::StatusCode::NOT_FOUND : grpc::StatusCode::UNAVAILABLE,
            scenario.c_str());
    } else if (scenario == "stream") {
        ok = stream(*stub);
    } else if (scenario == "async") {
        ok = async_unary(*stub);
    } else if (scenario == "callback") {
        ok = callback_unary(*stub);
    } else if (scenario == "hop" && argc == 4) {
        grpc::ClientContext ctx;
        deadline(ctx);
        gs::Msg in, out;
        in.set_text(argv[3]);
        grpc::Status st = stub->Hop(&ctx, in, &out);
        ok = expect(st, grpc::StatusCode::OK, "hop") && out.text() == "hop";
    } else {
        std::cerr << "gs_client: unknown scenario " << scenario << "\n";
        return 2;
    }
    return ok ? 0 : 1;
}
