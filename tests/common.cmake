# Tests of the helpers in common/ (monotonic deadlines and condition variables, errbuf
# formatting) that libdatacarrier, libkproducer and libskywalking share. Linked with the helpers'
# objects alone, so a helper that reached into a library would fail to link here.
sw_add_unit_test(test_common
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_common.c
  LIBS swcommon_objects)
