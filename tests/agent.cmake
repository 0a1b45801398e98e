# Tests of the agent (libskywalking): unit tests per module, the no-allocation test, fuzzers
# for the header and config parsers, and the span benchmark. The tests include internal headers
# from agent/src to exercise the pure parsers directly.
if(TARGET skywalking)
  set(SW_AGENT_TESTS test_span test_sw8 test_sampling test_config test_file_reporter
                     test_span_alloc test_segment_pool test_chunk test_log
                     test_config_hostile test_file_reporter_shared
                     test_span_async test_span_mark test_w3c test_utf8
                     test_request_context test_symbolizer
                     test_profile_sampler)
  # Meters and dynamic configuration (agent/src/meter, meter/meter_report.c, grpc/cds.c).
  list(APPEND SW_AGENT_TESTS test_meter)
  foreach(t ${SW_AGENT_TESTS})
    sw_add_unit_test(${t} SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/${t}.c LIBS skywalking)
    target_include_directories(${t} PRIVATE ${PROJECT_SOURCE_DIR}/agent/src
                                            ${PROJECT_SOURCE_DIR}/common/include
                                            ${CMAKE_CURRENT_SOURCE_DIR}/unit)
  endforeach()
  target_compile_definitions(test_meter PRIVATE
    SW_TEST_MAL_FILE="${PROJECT_SOURCE_DIR}/agent/contrib/oap/meter-analyzer-config/skywalking-c.yaml")

  # The three error tables (DC_E*, KP_E*, SW_E*): disjoint ranges, a name and a message for every
  # code; and every error skywalking.h documents, called (tests/unit/test_error_paths_sw.c).
  sw_add_unit_test(test_error_codes SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_error_codes.c
                   LIBS skywalking kproducer datacarrier)
  sw_add_unit_test(test_error_paths_sw
                   SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_error_paths_sw.c
                   LIBS skywalking)
  target_include_directories(test_error_paths_sw PRIVATE ${PROJECT_SOURCE_DIR}/agent/src)

  # The direct SegmentObject writer against protobuf-c's packing (tests/support/segment_pbc.c).
  # Copies of short strings without memcpy calls (agent/src/util/small_copy.h).
  sw_add_unit_test(test_small_copy SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_small_copy.c)
  target_include_directories(test_small_copy PRIVATE ${PROJECT_SOURCE_DIR}/agent/src)

  sw_add_unit_test(test_segment_encode
                   SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_segment_encode.c
                           ${CMAKE_CURRENT_SOURCE_DIR}/support/segment_pbc.c
                   LIBS skywalking)
  target_include_directories(test_segment_encode PRIVATE ${PROJECT_SOURCE_DIR}/agent/src)

  # The span clock (TSC calibrated against CLOCK_REALTIME, and its fallback).
  sw_add_unit_test(test_clock SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_clock.c
                   LIBS skywalking)
  target_include_directories(test_clock PRIVATE ${PROJECT_SOURCE_DIR}/agent/src)

  foreach(f sw8 correlation config producer_config cyg_patterns grpc_commands sw8x w3c cds
          segment_encode)
    sw_add_fuzzer(fuzz_${f} SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/fuzz_${f}.c
                  LIBS skywalking CORPUS ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/corpus/fuzz_${f})
    target_include_directories(fuzz_${f} PRIVATE ${PROJECT_SOURCE_DIR}/agent/src
                                                   ${PROJECT_SOURCE_DIR}/common/include)
  endforeach()
  # The UTF-8 oracle of the tests (support/utf8_valid.h): decoded strings and encoded segments
  # must be valid UTF-8.
  target_include_directories(fuzz_sw8 PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/support)
  target_include_directories(fuzz_segment_encode PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/support)
  # The producer-config parser fills a kp_conf (libkproducer's public header).
  target_include_directories(fuzz_producer_config PRIVATE ${PROJECT_SOURCE_DIR}/producer/include)

  sw_add_bench(span_bench SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/bench/span_bench.c
               LIBS skywalking)
  target_include_directories(span_bench PRIVATE ${PROJECT_SOURCE_DIR}/agent/src)
  # What the agent costs per segment at 100 and 1000 segments/s (the consumer's wake-ups).
  sw_add_bench(rate_bench SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/bench/rate_bench.c LIBS skywalking)
  # What a traced call costs when the caches are cold, as a real server leaves them.
  sw_add_bench(cold_bench SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/bench/cold_bench.c LIBS skywalking)
  # What recording a user meter costs, against an atomic increment.
  sw_add_bench(meter_bench SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/bench/meter_bench.c
               LIBS skywalking)
  # What a trace-profiling sample costs the sampled thread and the agent (agent/src/profile),
  # against the same run without a task.
  sw_add_bench(profile_bench SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/bench/profile_bench.c
               LIBS skywalking PkgConfig::GRPC)
  target_include_directories(profile_bench PRIVATE ${PROJECT_SOURCE_DIR}/agent/src)
  target_compile_options(profile_bench PRIVATE
    -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -fno-optimize-sibling-calls)
endif()

# One logging path (agent/src/log): no other write to stderr in the agent's library code.
add_test(NAME agent_no_direct_stderr
         COMMAND sh -c "! grep -rnE 'fprintf *[(] *stderr|fputs *[(][^;]*stderr|perror *[(]|[^_a-z]warnx? *[(]' '${PROJECT_SOURCE_DIR}/agent/src' '${PROJECT_SOURCE_DIR}/agent/preload'")
set_tests_properties(agent_no_direct_stderr PROPERTIES LABELS unit)

# A setuid-root copy of a program linked with libskywalking, run as an unprivileged user
# (test_secure.c; skipped unless root, and under sanitizers).
if(TARGET skywalking)
  add_executable(sw_secure_probe ${CMAKE_CURRENT_SOURCE_DIR}/integration/secure/sw_secure_probe.c)
  target_link_libraries(sw_secure_probe PRIVATE skywalking)
  sw_target_defaults(sw_secure_probe)
  sw_add_unit_test(test_secure SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/integration/test_secure.c)
  target_compile_definitions(test_secure PRIVATE SW_SECURE_PROBE="$<TARGET_FILE:sw_secure_probe>")
  add_dependencies(test_secure sw_secure_probe)
endif()

# libskywalking.so loaded with dlopen, used, shut down and unloaded three times, and loaded
# with no spare room in the static TLS block (tests/integration/test_dlopen.c). The test binary
# does not link the library: it finds it by path.
if(TARGET skywalking_shared)
  sw_add_unit_test(test_dlopen SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/integration/test_dlopen.c
                   LIBS ${CMAKE_DL_LIBS})
  target_include_directories(test_dlopen PRIVATE ${PROJECT_SOURCE_DIR}/agent/include)
  target_compile_definitions(test_dlopen PRIVATE
    SW_TEST_LIBSKYWALKING="$<TARGET_FILE:skywalking_shared>"
    SW_TEST_DLOPEN_DEMO="$<TARGET_FILE:sw_dlopen_demo>")
  add_dependencies(test_dlopen skywalking_shared sw_dlopen_demo)
endif()

# dlopen_bench: libskywalking.so (thread-locals with TLS descriptors) against the same objects
# built with initial-exec thread-locals, both loaded with dlopen (tests/bench/dlopen_bench.c).
# libskywalking_ie_bench.so exists only for this comparison; it is not installed. Not in the
# sanitizer presets: a figure there means nothing, and ThreadSanitizer's runtime crashes on an
# initial-exec library loaded with dlopen.
if(TARGET skywalking_shared AND NOT SW_SANITIZE)
  add_library(skywalking_ie_bench SHARED
    $<TARGET_OBJECTS:skywalking_objects> $<TARGET_OBJECTS:skywalking_tls_initial_exec>
    $<TARGET_OBJECTS:datacarrier_objects> $<TARGET_OBJECTS:datacarrier_tls_initial_exec>
    $<TARGET_OBJECTS:swproto_objects> $<TARGET_OBJECTS:swcommon_objects>)
  target_link_options(skywalking_ie_bench PRIVATE
    -Wl,--version-script=${PROJECT_SOURCE_DIR}/agent/skywalking.map -Wl,-Bsymbolic-functions
    -Wl,--no-undefined)
  target_link_libraries(skywalking_ie_bench PRIVATE
    kproducer PkgConfig::PROTOBUF_C PkgConfig::GRPC PkgConfig::LIBDW Threads::Threads
    ${CMAKE_DL_LIBS})
  sw_target_defaults(skywalking_ie_bench)
  sw_add_bench(dlopen_bench SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/bench/dlopen_bench.c
               LIBS ${CMAKE_DL_LIBS})
  target_include_directories(dlopen_bench PRIVATE ${PROJECT_SOURCE_DIR}/agent/include)
  target_compile_definitions(dlopen_bench PRIVATE
    SW_BENCH_LIB_TLSDESC="$<TARGET_FILE:skywalking_shared>"
    SW_BENCH_LIB_IE="$<TARGET_FILE:skywalking_ie_bench>")
  add_dependencies(dlopen_bench skywalking_shared skywalking_ie_bench)
endif()
