/*
 * preload_grpc_sync.cpp - the calls of libgrpc++'s synchronous server (internal, part of the
 * gRPC plugin, preload_grpc.c).
 *
 * A C++ synchronous server does not ask for its calls through gRPC's C API
 * (grpc_server_request_registered_call): libgrpc++ gives the core an allocator per method
 * (grpc_core::Server::SetRegisteredMethodAllocator, SetBatchMethodAllocator for unregistered
 * methods), which the core calls for each new call to learn where to put it (the call, its
 * metadata) and which tag to complete on the server's queue. These two functions are
 * interposed (libgrpc++ calls them through its PLT) to wrap each allocator: the wrapper notes
 * the allocation's tag, call and metadata as a request awaited (sw__grpc_request_note), so the
 * completion that grpc_completion_queue_next hands the server's threads begins the entry span,
 * as for the C API. The allocation is returned unchanged but, on a callback queue (the callback
 * API's CallbackService), for its tag: a functor of the plugin's that runs the original
 * (preload_grpc_callback.c).
 *
 * The structures below are gRPC 1.51's (core 29, Debian 12's libgrpc29): the interposers wrap
 * only when grpc_version_string() says core 29 and otherwise forward untouched.
 */
#include <dlfcn.h>
#include <grpc/grpc.h>

#include <cstring>
#include <functional>
#include <utility>

extern "C" {
#include "preload_grpc.h"
}

namespace grpc_core
{
/* The part of gRPC 1.51's src/core/lib/surface/server.h used here (same names, same layout). */
class Server
{
  public:
    struct RegisteredCallAllocation {
        void *tag;
        grpc_call **call;
        grpc_metadata_array *initial_metadata;
        gpr_timespec *deadline;
        grpc_byte_buffer **optional_payload;
        grpc_completion_queue *cq;
    };
    struct BatchCallAllocation {
        void *tag;
        grpc_call **call;
        grpc_metadata_array *initial_metadata;
        grpc_call_details *details;
        grpc_completion_queue *cq;
    };
    void SetRegisteredMethodAllocator(grpc_completion_queue *cq, void *method_tag,
                                      std::function<RegisteredCallAllocation()> allocator);
    void SetBatchMethodAllocator(grpc_completion_queue *cq,
                                 std::function<BatchCallAllocation()> allocator);
};
} // namespace grpc_core

namespace
{

/* Whether the core is the one whose layout is declared above, and tracing is on (starts the
   agent: here, on the thread building the server, not inside the core's allocation). */
bool wrap()
{
    const char *v = grpc_version_string();
    return v != nullptr && std::strncmp(v, "29.", 3) == 0 && sw__grpc_server_tracing();
}

template <typename Fn> Fn next(const char *name)
{
    void *sym = dlsym(RTLD_NEXT, name);
    Fn fn;
    static_assert(sizeof fn == sizeof sym, "function and data pointers of one size");
    std::memcpy(&fn, &sym, sizeof fn);
    return fn;
}

} // namespace

void grpc_core::Server::SetRegisteredMethodAllocator(
    grpc_completion_queue *cq, void *method_tag,
    std::function<RegisteredCallAllocation()> allocator)
{
    /* The member function, called as the free function it is in the ABI (this first). */
    using Real = void (*)(Server *, grpc_completion_queue *, void *,
                          std::function<RegisteredCallAllocation()>);
    Real real = next<Real>("_ZN9grpc_core6Server28SetRegisteredMethodAllocatorEP21grpc_completion_"
                           "queuePvSt8functionIFNS0_24RegisteredCallAllocationEvEE");
    if (real == nullptr) {
        return;
    }
    if (!wrap()) {
        real(this, cq, method_tag, std::move(allocator));
        return;
    }
    /* The completion comes on `cq` (the allocation's cq is the one bound to the call). */
    real(this, cq, method_tag, [inner = std::move(allocator), method_tag, cq]() {
        RegisteredCallAllocation a = inner();
        a.tag = sw__grpc_request_note(a.tag, a.call, a.initial_metadata, nullptr, method_tag, cq);
        return a;
    });
}

void grpc_core::Server::SetBatchMethodAllocator(grpc_completion_queue *cq,
                                                std::function<BatchCallAllocation()> allocator)
{
    using Real = void (*)(Server *, grpc_completion_queue *, std::function<BatchCallAllocation()>);
    Real real = next<Real>("_ZN9grpc_core6Server23SetBatchMethodAllocatorEP21grpc_completion_"
                           "queueSt8functionIFNS0_19BatchCallAllocationEvEE");
    if (real == nullptr) {
        return;
    }
    if (!wrap()) {
        real(this, cq, std::move(allocator));
        return;
    }
    real(this, cq, [inner = std::move(allocator), cq]() {
        BatchCallAllocation a = inner();
        a.tag = sw__grpc_request_note(a.tag, a.call, a.initial_metadata, a.details, nullptr, cq);
        return a;
    });
}
