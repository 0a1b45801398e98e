# Tests of libdatacarrier (datacarrier/). Included by tests/CMakeLists.txt.
if(TARGET datacarrier)
  sw_add_unit_test(test_datacarrier
    SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_datacarrier.c
    LIBS datacarrier)
  # Every error datacarrier.h documents, called (tests/unit/test_error_paths_dc.c).
  sw_add_unit_test(test_error_paths_dc
    SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_error_paths_dc.c
    LIBS datacarrier)
  # 4 producers x 1M items per strategy in the default build; sanitizer builds scale down
  # (see the top of the file; DC_STRESS_ITEMS overrides the per-producer count).
  sw_add_unit_test(test_datacarrier_stress
    SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_datacarrier_stress.c
    LIBS datacarrier
    LABELS stress
    TIMEOUT 600)
  sw_add_bench(datacarrier_bench
    SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/bench/datacarrier_bench.c
    LIBS datacarrier)
  # The README demo must keep working: it exits non-zero when its counters do not add up.
  add_test(NAME dc_example COMMAND dc_example)
  set_tests_properties(dc_example PROPERTIES LABELS unit TIMEOUT 60)
endif()
