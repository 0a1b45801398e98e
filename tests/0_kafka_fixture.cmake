# The real Apache Kafka broker that every Kafka test runs against (label kafka).
#
# kafka_broker_start (FIXTURES_SETUP kafka) starts one KRaft node on a free loopback port in
# ${CMAKE_BINARY_DIR}/kafka-fixture through tests/support/kafka/broker.sh, which fetches the
# jars with Maven on first use (scripts/fetch-kafka.sh); kafka_broker_stop (FIXTURES_CLEANUP
# kafka) stops it, also after failed tests. Tests find the broker through
# tests/support/kafka_test_env.h, which reads the directory from SW_TEST_KAFKA_DIR.
#
# This file is named 0_... so that it sorts before every other tests/*.cmake (they are
# included in alphabetical order) and sw_kafka_test() is defined when they are read.

set(SW_KAFKA_BROKER_SH ${PROJECT_SOURCE_DIR}/tests/support/kafka/broker.sh)
set(SW_KAFKA_FIXTURE_DIR ${CMAKE_BINARY_DIR}/kafka-fixture)

# Topics every Kafka test may use; a test that needs others creates them itself
# (sw_test_kafka_create_topic) or starts its own cluster (sw_test_kafka_start).
set(SW_KAFKA_FIXTURE_TOPICS
  --topic sw-test-6p:6
  --topic sw-test-1p:1
  --topic skywalking-segments:3
  --topic skywalking-managements:1
  --topic skywalking-meters:1)

# The lifetime bounds how long the broker can outlive a ctest run that never reached the
# cleanup test (ctest killed): its watchdog then kills the JVM.
# --security adds the TLS and SASL listeners (ssl, badhost, mtls, sasl, sasl_ssl, reauth) that
# test_producer_security and the Kafka reporter's security cases use; one broker process.
add_test(NAME kafka_broker_start
  COMMAND ${SW_KAFKA_BROKER_SH} start --dir ${SW_KAFKA_FIXTURE_DIR} --nodes 1
          ${SW_KAFKA_FIXTURE_TOPICS} --lifetime 7200 --security)
# 600 s: the first run on a fresh machine resolves ~90 jars with Maven.
set_tests_properties(kafka_broker_start PROPERTIES
  FIXTURES_SETUP kafka LABELS kafka TIMEOUT 600)

add_test(NAME kafka_broker_stop COMMAND ${SW_KAFKA_BROKER_SH} stop --dir ${SW_KAFKA_FIXTURE_DIR})
set_tests_properties(kafka_broker_stop PROPERTIES
  FIXTURES_CLEANUP kafka LABELS kafka TIMEOUT 120)

# sw_kafka_test(<test> [TARGET <target>])
# Makes an already registered test run against the fixture broker: FIXTURES_REQUIRED kafka,
# label kafka instead of unit, and the environment kafka_test_env.h reads
# (SW_TEST_KAFKA_DIR, SW_TEST_KAFKA_BROKER_SH). The executable (TARGET, by default the target
# named like the test, or like the test without a trailing _smoke as sw_add_bench names them)
# also gets SW_TEST_KAFKA_BROKER_SH compiled in, so that a benchmark run by hand without
# --bootstrap can start its own broker.
function(sw_kafka_test test)
  cmake_parse_arguments(K "" "TARGET" "" ${ARGN})
  if(NOT TEST ${test})
    message(FATAL_ERROR "sw_kafka_test(${test}): no such test; register it first")
  endif()
  get_test_property(${test} LABELS labels)
  if(NOT labels)
    set(labels "")
  endif()
  list(FILTER labels EXCLUDE REGEX "^(unit)?$")
  list(APPEND labels kafka)
  list(REMOVE_DUPLICATES labels)
  set_tests_properties(${test} PROPERTIES FIXTURES_REQUIRED kafka LABELS "${labels}")
  set_property(TEST ${test} APPEND PROPERTY ENVIRONMENT
    "SW_TEST_KAFKA_DIR=${SW_KAFKA_FIXTURE_DIR}"
    "SW_TEST_KAFKA_BROKER_SH=${SW_KAFKA_BROKER_SH}")
  if(NOT K_TARGET)
    string(REGEX REPLACE "_smoke$" "" K_TARGET ${test})
  endif()
  if(TARGET ${K_TARGET})
    target_compile_definitions(${K_TARGET} PRIVATE
      SW_TEST_KAFKA_BROKER_SH="${SW_KAFKA_BROKER_SH}")
  endif()
endfunction()

# The harness's own test: the fixture broker round trip, a private 3-node cluster with a node
# killed and restarted on its old port.
sw_add_unit_test(test_kafka_fixture SOURCES integration/test_kafka_fixture.c
                 LABELS kafka TIMEOUT 600)
sw_kafka_test(test_kafka_fixture)
