# Tests of libkproducer (the Kafka producer core): unit tests without a broker, integration
# tests against a real broker (label kafka, via sw_kafka_test from 0_kafka_fixture.cmake) and
# the producer benchmark against librdkafka.
if(NOT TARGET kproducer)
  return()
endif()
# ZLIB::ZLIB is an imported target of producer/'s directory scope; make it visible here too,
# for kproducer_internal's link interface.
find_package(ZLIB REQUIRED)

sw_add_unit_test(test_buffer_pool SOURCES unit/test_buffer_pool.c LIBS kproducer_internal)
sw_add_unit_test(test_producer_conf SOURCES unit/test_producer_conf.c LIBS kproducer_internal)
# The sender against the scripted broker test double (tests/support/scripted_broker.h): no
# real broker, a few seconds, every preset.
sw_add_unit_test(test_producer_sender SOURCES unit/test_producer_sender.c
                 support/scripted_broker.c LIBS kproducer_internal TIMEOUT 120)
if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_accumulator.c)
  sw_add_unit_test(test_accumulator SOURCES unit/test_accumulator.c LIBS kproducer_internal)
endif()

# Real-broker tests: each file tests/integration/test_producer_<name>.c is one criterion
# binary, run against the broker fixture.
file(GLOB producer_integration CONFIGURE_DEPENDS
     ${CMAKE_CURRENT_SOURCE_DIR}/integration/test_producer_*.c)
foreach(src ${producer_integration})
  get_filename_component(name ${src} NAME_WE)
  set(support "")
  if(name STREQUAL "test_producer_faults")
    # About a minute of timed fault windows: the default preset only (sanitizers would
    # stretch the recovery times it asserts).
    if(SW_SANITIZE)
      continue()
    endif()
    set(support ${CMAKE_CURRENT_SOURCE_DIR}/support/fault_proxy.c)
  endif()
  sw_add_unit_test(${name} SOURCES ${src} ${support} LIBS kproducer_internal LABELS kafka
                   TIMEOUT 900)
  if(COMMAND sw_kafka_test)
    sw_kafka_test(${name})
  endif()
endforeach()

pkg_check_modules(RDKAFKA IMPORTED_TARGET rdkafka)
if(RDKAFKA_FOUND AND EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/bench/producer_bench.c)
  sw_add_bench(producer_bench SOURCES bench/producer_bench.c
               LIBS kproducer PkgConfig::RDKAFKA
               SMOKE_ARGS --smoke LABELS kafka)
  if(COMMAND sw_kafka_test)
    sw_kafka_test(producer_bench_smoke)
  endif()
endif()
