/*
 * gs_sync_server.cpp - an ordinary gRPC C++ server on libgrpc++'s synchronous API (handlers on
 * the library's thread pool), or with "callback" on its callback API (reactors), for the span
 * tests; it knows nothing of skywalking.
 *
 *   gs_sync_server PORT_FILE [callback]
 *
 * Serves gs.Echo's Unary, Fail and (synchronous API only) Stream; Hop is left unimplemented
 * (UNIMPLEMENTED); on 127.0.0.1 (a port the kernel picks, written to PORT_FILE) until its stdin
 * closes.
 */
#include <grpcpp/grpcpp.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>

#include "gs_echo.grpc.pb.h"

namespace
{

class EchoImpl final : public gs::Echo::Service
{
    grpc::Status Unary(grpc::ServerContext *, const gs::Msg *req, gs::Msg *resp) override
    {
        resp->set_text(req->text());
        return grpc::Status::OK;
    }

    grpc::Status Fail(grpc::ServerContext *, const gs::Msg *, gs::Msg *) override
    {
        return grpc::Status(grpc::StatusCode::NOT_FOUND, "no such thing");
    }

    grpc::Status Stream(grpc::ServerContext *,
                        grpc::ServerReaderWriter<gs::Msg, gs::Msg> *stream) override
    {
        gs::Msg m;
        while (stream->Read(&m)) {
            stream->Write(m);
        }
        return grpc::Status::OK;
    }
};

class CallbackImpl final : public gs::Echo::CallbackService
{
    grpc::ServerUnaryReactor *Unary(grpc::CallbackServerContext *ctx, const gs::Msg *req,
                                    gs::Msg *resp) override
    {
        resp->set_text(req->text());
        grpc::ServerUnaryReactor *r = ctx->DefaultReactor();
        r->Finish(grpc::Status::OK);
        return r;
    }

    grpc::ServerUnaryReactor *Fail(grpc::CallbackServerContext *ctx, const gs::Msg *,
                                   gs::Msg *) override
    {
        grpc::ServerUnaryReactor *r = ctx->DefaultReactor();
        r->Finish(grpc::Status(grpc::StatusCode::NOT_FOUND, "no such thing"));
        return r;
    }
};

} // namespace

int main(int argc, char **argv)
{
    bool callback = argc == 3 && std::string(argv[2]) == "callback";
    if (argc != 2 && !callback) {
        std::cerr << "usage: gs_sync_server PORT_FILE [callback]\n";
        return 2;
    }
    EchoImpl service;
    CallbackImpl callback_service;
    int port = 0;
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    if (callback) {
        builder.RegisterService(&callback_service);
    } else {
        builder.RegisterService(&service);
    }
    std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
    if (!server || port == 0) {
        std::cerr << "gs_sync_server: cannot listen\n";
        return 1;
    }
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
    return 0;
}
