/*
 * gs_sync_server.cpp - an ordinary gRPC C++ server on libgrpc++'s synchronous API (handlers on
 * the library's thread pool) for the span tests; it knows nothing of skywalking.
 *
 *   gs_sync_server PORT_FILE
 *
 * Serves gs.Echo's Unary, Fail and Stream (Hop is left unimplemented: UNIMPLEMENTED) on
 * 127.0.0.1 (a port the kernel picks, written to PORT_FILE) until its stdin closes.
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

} // namespace

int main(int argc, char **argv)
{
    if (argc != 2) {
        std::cerr << "usage: gs_sync_server PORT_FILE\n";
        return 2;
    }
    EchoImpl service;
    int port = 0;
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(&service);
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
