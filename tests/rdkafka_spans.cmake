# The librdkafka plugin of libskywalking-preload.so (agent/preload/preload_rdkafka*.c) against
# the real Kafka broker of the fixture (label kafka;preload): rk_client, an ordinary librdkafka
# program, produces and consumes with every interposed API; test_rdkafka_spans checks the spans
# it reported. Default preset only: a sanitizer build of the library cannot be preloaded into an
# uninstrumented program, and the broker is a heavy server.
if(NOT TARGET skywalking-preload OR SW_SANITIZE)
  return()
endif()

pkg_check_modules(RK_SPANS_RDKAFKA REQUIRED IMPORTED_TARGET rdkafka)
pkg_check_modules(RK_SPANS_RDKAFKAXX REQUIRED IMPORTED_TARGET rdkafka++)

add_executable(rk_client integration/rdkafka_spans/rk_client.c)
target_link_libraries(rk_client PRIVATE PkgConfig::RK_SPANS_RDKAFKA Threads::Threads)
sw_target_defaults(rk_client)

# The same through librdkafka's C++ API (librdkafka++ calls the interposed C functions).
add_executable(rk_cpp integration/rdkafka_spans/rk_cpp.cpp)
target_link_libraries(rk_cpp PRIVATE PkgConfig::RK_SPANS_RDKAFKAXX)
sw_target_defaults(rk_cpp)

sw_add_unit_test(test_rdkafka_spans
  SOURCES integration/test_rdkafka_spans.c integration/preload/pl_support.c
  LIBS swproto
  LABELS "kafka;preload"
  TIMEOUT 300)
target_compile_definitions(test_rdkafka_spans PRIVATE
  PL_PRELOAD_LIB="$<TARGET_FILE:skywalking-preload>"
  RK_CLIENT="$<TARGET_FILE:rk_client>"
  RK_CPP="$<TARGET_FILE:rk_cpp>")
add_dependencies(test_rdkafka_spans skywalking-preload rk_client rk_cpp)
sw_kafka_test(test_rdkafka_spans)

# C -> Kafka -> Python (SkyWalking's Python agent, kafka-python) -> Kafka -> C, all reporting
# to the project's gRPC test collector; skipped (77) without the venv of scripts/fetch-tools.sh.
add_test(NAME rdkafka_cross_lang
  COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/integration/rdkafka_spans/cross_lang.py
          --rk-client $<TARGET_FILE:rk_client>
          --preload $<TARGET_FILE:skywalking-preload>
          --collector ${PROJECT_SOURCE_DIR}/tests/support/grpc_collector.py
          --bootstrap-dir ${SW_KAFKA_FIXTURE_DIR})
set_tests_properties(rdkafka_cross_lang PROPERTIES
  LABELS "kafka;preload" TIMEOUT 300 SKIP_RETURN_CODE 77)
sw_kafka_test(rdkafka_cross_lang TARGET rk_client)
