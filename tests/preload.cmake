# Automatic instrumentation: libskywalking-preload.so in real programs (label preload) and the
# -finstrument-functions hooks (label unit: no server), plus the preload benchmark.
#
# The LD_PRELOAD tests preload the library into the system's curl, ls and sort. A sanitizer
# build of the library cannot be loaded into those uninstrumented programs (the sanitizer
# runtime lives in the executable), so they are registered in plain builds only.
pkg_check_modules(PL_CURL REQUIRED IMPORTED_TARGET libcurl)
pkg_check_modules(PL_MHD REQUIRED IMPORTED_TARGET libmicrohttpd)

# An ordinary libcurl + libmicrohttpd program that knows nothing of skywalking.
add_executable(pl_server integration/preload/pl_server.c)
target_link_libraries(pl_server PRIVATE PkgConfig::PL_CURL PkgConfig::PL_MHD Threads::Threads)
sw_target_defaults(pl_server)

# A program built with -finstrument-functions; -rdynamic so that dladdr can name its functions.
add_executable(pl_cyg integration/preload/pl_cyg.c)
target_compile_options(pl_cyg PRIVATE -finstrument-functions -O1)
target_link_libraries(pl_cyg PRIVATE skywalking Threads::Threads)
target_link_options(pl_cyg PRIVATE -rdynamic)
sw_target_defaults(pl_cyg)

sw_add_unit_test(test_preload_cyg
  SOURCES integration/test_preload_cyg.c integration/preload/pl_support.c
  LIBS swproto
  LABELS "unit;preload")
target_compile_definitions(test_preload_cyg PRIVATE PL_CYG="$<TARGET_FILE:pl_cyg>")
add_dependencies(test_preload_cyg pl_cyg)

# sw_add_preload_test(NAME [LIBS lib...] [LABELS label...] [DEFS def...]): the criterion test
# integration/NAME.c (with pl_support.c), which runs pl_server under libskywalking-preload.so.
function(sw_add_preload_test name)
  cmake_parse_arguments(P "" "" "LIBS;LABELS;DEFS" ${ARGN})
  sw_add_unit_test(${name}
    SOURCES integration/${name}.c integration/preload/pl_support.c
    LIBS swproto ${P_LIBS}
    LABELS ${P_LABELS}
    TIMEOUT 600)
  target_compile_definitions(${name} PRIVATE
    PL_PRELOAD_LIB="$<TARGET_FILE:skywalking-preload>"
    PL_SERVER="$<TARGET_FILE:pl_server>" ${P_DEFS})
  add_dependencies(${name} skywalking-preload pl_server)
endfunction()

if(NOT SW_SANITIZE)
  sw_add_preload_test(test_preload LABELS preload)

  # A forking server whose parent runs the gRPC reporter: its children cannot use gRPC and run
  # untraced, the parent reports all its segments (agent/src/report/grpc_reporter.c).
  sw_add_preload_test(test_preload_grpc_fork
    LIBS skywalking
    LABELS preload grpc
    DEFS SW_TEST_GRPC_COLLECTOR="${CMAKE_CURRENT_SOURCE_DIR}/support/grpc_collector.py")

  # W3C Trace Context between preloaded programs and an OpenTelemetry-traced Python service
  # (the project's venv, scripts/fetch-tools.sh).
  sw_add_preload_test(test_preload_w3c
    LABELS preload
    DEFS OTEL_HOP="${CMAKE_CURRENT_SOURCE_DIR}/support/otel_hop.py")
  # syslog(3) lines of an unmodified program to the gRPC collector (SW_PLUGIN_SYSLOG=true).
  add_executable(pl_syslog integration/preload/pl_syslog.c)
  sw_target_defaults(pl_syslog)
  # The same program without _FORTIFY_SOURCE: plain syslog / vsyslog instead of __syslog_chk.
  add_executable(pl_syslog_plain integration/preload/pl_syslog.c)
  sw_target_defaults(pl_syslog_plain)
  target_compile_options(pl_syslog_plain PRIVATE -U_FORTIFY_SOURCE)
  sw_add_unit_test(test_preload_syslog
    SOURCES integration/test_preload_syslog.c
    LIBS skywalking
    LABELS "preload;grpc"
    TIMEOUT 600)
  target_compile_definitions(test_preload_syslog PRIVATE
    PL_PRELOAD_LIB="$<TARGET_FILE:skywalking-preload>"
    PL_SYSLOG="$<TARGET_FILE:pl_syslog>"
    PL_SYSLOG_PLAIN="$<TARGET_FILE:pl_syslog_plain>"
    SW_TEST_GRPC_COLLECTOR="${CMAKE_CURRENT_SOURCE_DIR}/support/grpc_collector.py")
  add_dependencies(test_preload_syslog skywalking-preload pl_syslog pl_syslog_plain)

  # Hostile bytes in URLs and sw8 headers of the preloaded server's clients: every segment
  # still reaches the gRPC collector (which refuses invalid UTF-8, as the OAP does).
  sw_add_unit_test(test_preload_utf8
    SOURCES integration/test_preload_utf8.c integration/preload/pl_support.c
    LIBS skywalking
    LABELS "preload;grpc"
    TIMEOUT 600)
  target_compile_definitions(test_preload_utf8 PRIVATE
    PL_PRELOAD_LIB="$<TARGET_FILE:skywalking-preload>"
    PL_SERVER="$<TARGET_FILE:pl_server>"
    SW_TEST_GRPC_COLLECTOR="${CMAKE_CURRENT_SOURCE_DIR}/support/grpc_collector.py")
  add_dependencies(test_preload_utf8 skywalking-preload pl_server)

  sw_add_bench(preload_bench
    SOURCES bench/preload_bench.c
    LIBS skywalking
    LABELS preload)
  target_compile_definitions(preload_bench PRIVATE
    PL_PRELOAD_LIB="$<TARGET_FILE:skywalking-preload>"
    PL_SERVER="$<TARGET_FILE:pl_server>")
  add_dependencies(preload_bench skywalking-preload pl_server)
  target_link_options(preload_bench PRIVATE -rdynamic) # dladdr names bench_rejected
endif()
