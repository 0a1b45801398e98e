# The agent's Kafka reporter against the real fixture broker (label kafka), and the end-to-end
# reporter benchmark (file, Kafka and, when its collector exists, gRPC).
if(TARGET skywalking AND TARGET kproducer AND TARGET sw_demo)
  sw_add_unit_test(test_kafka_reporter
                   SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/integration/test_kafka_reporter.c
                   LIBS skywalking swproto LABELS kafka TIMEOUT 900)
  target_include_directories(test_kafka_reporter PRIVATE ${PROJECT_SOURCE_DIR}/agent/src)
  target_compile_definitions(test_kafka_reporter PRIVATE
                             SW_DEMO_PATH="$<TARGET_FILE:sw_demo>")
  add_dependencies(test_kafka_reporter sw_demo)
  sw_kafka_test(test_kafka_reporter)

  sw_add_bench(reporter_bench SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/bench/reporter_bench.c
               LIBS skywalking LABELS kafka FIXTURES kafka)
  target_compile_definitions(reporter_bench PRIVATE
    SW_GRPC_COLLECTOR_PY="${PROJECT_SOURCE_DIR}/tests/support/grpc_collector.py")
  sw_kafka_test(reporter_bench_smoke)
endif()
