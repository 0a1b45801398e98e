/*
 * tls_model.h - the TLS model of the agent's thread-locals (internal).
 *
 * initial-exec (one instruction per access) in the objects of the static libraries and the
 * LD_PRELOAD library, which are part of the program from its start; the compiler's default,
 * with TLS descriptors, in the objects of libskywalking.so, which may be loaded with dlopen
 * (agent/CMakeLists.txt, "Thread-locals", defines SW__TLS_DYNAMIC for those).
 */
#ifndef SW_UTIL_TLS_MODEL_H
#define SW_UTIL_TLS_MODEL_H

#ifdef SW__TLS_DYNAMIC
#define SW__TLS_MODEL
#else
#define SW__TLS_MODEL __attribute__((tls_model("initial-exec")))
#endif

#endif /* SW_UTIL_TLS_MODEL_H */
