/*
 * gs_server.cpp - an ordinary gRPC C++ server (Debian's libgrpc++, the completion-queue API) for
 * the span tests; it knows nothing of skywalking: the tests run it under
 * libskywalking-preload.so. (The preload traces servers whose calls arrive through gRPC's C API:
 * C programs and this asynchronous C++ API; see docs/GRPC_SPANS.md for the synchronous one.)
 *
 *   gs_server PORT_FILE
 *
 * Serves gs.Echo on 127.0.0.1 (a port the kernel picks, written to PORT_FILE) with one thread
 * driving the queue, until its stdin closes; then shuts down and exits 0.
 */
#include <grpcpp/grpcpp.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <thread>

#include "gs_echo.grpc.pb.h"

namespace
{

using Service = gs::Echo::AsyncService;

/* One call in progress; Proceed(ok) is its completion-queue tag's step. */
class Call
{
  public:
    virtual ~Call() = default;
    virtual void Proceed(bool ok) = 0;
};

/* Unary, Fail and Hop: request, answer, done. */
class UnaryCall final : public Call
{
  public:
    enum Kind { UNARY, FAIL, HOP };
    UnaryCall(Service *s, grpc::ServerCompletionQueue *cq, Kind k)
        : service_(s), cq_(cq), kind_(k), responder_(&ctx_)
    {
        if (k == UNARY) {
            s->RequestUnary(&ctx_, &req_, &responder_, cq, cq, this);
        } else if (k == FAIL) {
            s->RequestFail(&ctx_, &req_, &responder_, cq, cq, this);
        } else {
            s->RequestHop(&ctx_, &req_, &responder_, cq, cq, this);
        }
    }

    void Proceed(bool ok) override
    {
        if (finished_ || !ok) {
            delete this;
            return;
        }
        new UnaryCall(service_, cq_, kind_); /* the next call of this method */
        finished_ = true;
        gs::Msg resp;
        if (kind_ == UNARY) {
            resp.set_text(req_.text());
            responder_.Finish(resp, grpc::Status::OK, this);
        } else if (kind_ == FAIL) {
            responder_.FinishWithError(grpc::Status(grpc::StatusCode::NOT_FOUND, "no such thing"),
                                       this);
        } else {
            auto stub = gs::Echo::NewStub(
                grpc::CreateChannel(req_.text(), grpc::InsecureChannelCredentials()));
            grpc::ClientContext ctx;
            ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
            gs::Msg in;
            in.set_text("hop");
            grpc::Status st = stub->Unary(&ctx, in, &resp);
            responder_.Finish(resp, st, this);
        }
    }

  private:
    Service *service_;
    grpc::ServerCompletionQueue *cq_;
    Kind kind_;
    grpc::ServerContext ctx_;
    gs::Msg req_;
    grpc::ServerAsyncResponseWriter<gs::Msg> responder_;
    bool finished_ = false;
};

/* Stream: echoes each message until the client's half-close, then OK. */
class StreamCall final : public Call
{
  public:
    StreamCall(Service *s, grpc::ServerCompletionQueue *cq) : service_(s), cq_(cq), stream_(&ctx_)
    {
        s->RequestStream(&ctx_, &stream_, cq, cq, this);
    }

    void Proceed(bool ok) override
    {
        switch (state_) {
        case REQUESTED:
            if (!ok) {
                delete this;
                return;
            }
            new StreamCall(service_, cq_);
            state_ = READING;
            stream_.Read(&msg_, this);
            return;
        case READING:
            if (ok) {
                state_ = WRITING;
                stream_.Write(msg_, this);
            } else { /* the client is done writing */
                state_ = FINISHING;
                stream_.Finish(grpc::Status::OK, this);
            }
            return;
        case WRITING:
            state_ = READING;
            stream_.Read(&msg_, this);
            return;
        case FINISHING:
            delete this;
            return;
        }
    }

  private:
    enum State { REQUESTED, READING, WRITING, FINISHING };
    Service *service_;
    grpc::ServerCompletionQueue *cq_;
    grpc::ServerContext ctx_;
    grpc::ServerAsyncReaderWriter<gs::Msg, gs::Msg> stream_;
    gs::Msg msg_;
    State state_ = REQUESTED;
};

} // namespace

int main(int argc, char **argv)
{
    if (argc != 2) {
        std::cerr << "usage: gs_server PORT_FILE\n";
        return 2;
    }
    Service service;
    int port = 0;
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(&service);
    std::unique_ptr<grpc::ServerCompletionQueue> cq = builder.AddCompletionQueue();
    std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
    if (!server || port == 0) {
        std::cerr << "gs_server: cannot listen\n";
        return 1;
    }
    new UnaryCall(&service, cq.get(), UnaryCall::UNARY);
    new UnaryCall(&service, cq.get(), UnaryCall::FAIL);
    new UnaryCall(&service, cq.get(), UnaryCall::HOP);
    new StreamCall(&service, cq.get());
    std::thread loop([&cq] {
        void *tag;
        bool ok;
        while (cq->Next(&tag, &ok)) {
            static_cast<Call *>(tag)->Proceed(ok);
        }
    });
    std::string tmp = std::string(argv[1]) + ".tmp";
    {
        std::ofstream f(tmp);
        f << port << "\n";
    }
    std::rename(tmp.c_str(), argv[1]);
    std::string line;
    while (std::getline(std::cin, line)) {
    }
    server->Shutdown();
    cq->Shutdown();
    loop.join();
    return 0;
}
