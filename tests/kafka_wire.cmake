# Kafka wire layer (producer/src/wire): protocol primitives and messages, RecordBatch v2,
# CRC-32C, murmur2, gzip, lz4, zstd. Unit tests, one fuzzer per decoder, and the codec benchmark.
if(TARGET kproducer_internal)
  # ZLIB::ZLIB is imported in producer/ only; the fuzzers below link it directly.
  find_package(ZLIB REQUIRED)
  foreach(t kafka_codec kafka_protocol record_batch crc32c murmur2 lz4 zstd)
    sw_add_unit_test(test_${t}
      SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_${t}.c
      LIBS kproducer_internal)
  endforeach()

  # Fuzzers compile the wire sources themselves so that libFuzzer's coverage instrumentation
  # (which the library target does not get) reaches the decoders.
  file(GLOB kafka_wire_sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/producer/src/wire/*.c)
  foreach(f api_versions metadata produce init_producer_id record_batch sasl)
    sw_add_fuzzer(fuzz_kafka_${f}
      SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/fuzz_kafka_${f}.c ${kafka_wire_sources}
              ${PROJECT_SOURCE_DIR}/producer/src/errors.c
      LIBS ZLIB::ZLIB PkgConfig::LZ4 PkgConfig::ZSTD Threads::Threads
      CORPUS ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/corpus/fuzz_kafka_${f})
    target_include_directories(fuzz_kafka_${f} PRIVATE
      ${PROJECT_SOURCE_DIR}/producer/include ${PROJECT_SOURCE_DIR}/producer/src)
  endforeach()

  # The connection's receive path: framing over a real socket, response-to-request match,
  # then the decoders (tests/fuzz/fuzz_kafka_connection.c).
  sw_add_fuzzer(fuzz_kafka_connection
    SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/fuzz_kafka_connection.c ${kafka_wire_sources}
            ${PROJECT_SOURCE_DIR}/producer/src/core/connection.c
            ${PROJECT_SOURCE_DIR}/producer/src/core/in_flight.c
            ${PROJECT_SOURCE_DIR}/producer/src/core/tls.c
            ${PROJECT_SOURCE_DIR}/producer/src/errors.c
    LIBS ZLIB::ZLIB PkgConfig::LZ4 PkgConfig::ZSTD PkgConfig::OPENSSL Threads::Threads
    CORPUS ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/corpus/fuzz_kafka_connection)
  target_include_directories(fuzz_kafka_connection PRIVATE
    ${PROJECT_SOURCE_DIR}/producer/include ${PROJECT_SOURCE_DIR}/producer/src)

  # What a broker or a user hands the SASL code: SCRAM server-first / server-final messages
  # and sasl.jaas.config entries (tests/fuzz/fuzz_scram.c).
  sw_add_fuzzer(fuzz_scram
    SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/fuzz_scram.c
            ${PROJECT_SOURCE_DIR}/producer/src/core/scram.c
            ${PROJECT_SOURCE_DIR}/producer/src/core/jaas.c
            ${PROJECT_SOURCE_DIR}/producer/src/core/conf.c
            ${PROJECT_SOURCE_DIR}/producer/src/errors.c
    LIBS PkgConfig::OPENSSL swcommon_objects
    CORPUS ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/corpus/fuzz_scram)
  target_include_directories(fuzz_scram PRIVATE
    ${PROJECT_SOURCE_DIR}/producer/include ${PROJECT_SOURCE_DIR}/producer/src)

  sw_add_bench(kafka_codec_bench
    SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/bench/kafka_codec_bench.c
    LIBS kproducer_internal)
endif()
