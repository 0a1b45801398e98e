# Tests of libkproducer (the Kafka producer core): unit tests without a broker, integration
# tests against a real broker (label kafka, via sw_kafka_test from 0_kafka_fixture.cmake) and
# the producer benchmark against librdkafka.
sw_add_unit_test(test_buffer_pool SOURCES unit/test_buffer_pool.c LIBS kproducer_internal)
sw_add_unit_test(test_producer_conf SOURCES unit/test_producer_conf.c LIBS kproducer_internal)
# security.protocol / ssl.* / sasl.* settings, the JAAS parser and SCRAM (RFC 7677 vectors).
sw_add_unit_test(test_producer_security_conf SOURCES unit/test_producer_security_conf.c
                 LIBS kproducer_internal)
# The sender against the scripted broker test double (tests/support/scripted_broker.h): no
# real broker, a few seconds, every preset.
sw_add_unit_test(test_producer_sender SOURCES unit/test_producer_sender.c
                 support/scripted_broker.c LIBS kproducer_internal TIMEOUT 120)
# Every error kproducer.h documents, called; what needs a broker against the scripted broker.
sw_add_unit_test(test_error_paths_kp SOURCES unit/test_error_paths_kp.c
                 support/scripted_broker.c LIBS kproducer_internal TIMEOUT 120)
# kproducer.h's limits against a hostile scripted broker: answers of millions of brokers or
# partitions, oversized frames, a thousand leaders (time and peak RSS bounds).
sw_add_unit_test(test_producer_limits SOURCES unit/test_producer_limits.c
                 support/scripted_broker.c LIBS kproducer_internal TIMEOUT 600)
# The program closing the sender's epoll set and eventfd (sender_epoll.c): no spin, recovery.
sw_add_unit_test(test_producer_fd_faults SOURCES unit/test_producer_fd_faults.c
                 support/scripted_broker.c LIBS kproducer_internal TIMEOUT 300)
sw_add_unit_test(test_accumulator SOURCES unit/test_accumulator.c LIBS kproducer_internal)

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
  sw_kafka_test(${name})
endforeach()

# librdkafka is the benchmark's baseline (scripts/install-deps.sh installs it).
pkg_check_modules(RDKAFKA REQUIRED IMPORTED_TARGET rdkafka)
sw_add_bench(producer_bench SOURCES bench/producer_bench.c bench/bench_segments.c
             LIBS kproducer swproto PkgConfig::RDKAFKA
             SMOKE_ARGS --smoke LABELS kafka)
sw_kafka_test(producer_bench_smoke)
