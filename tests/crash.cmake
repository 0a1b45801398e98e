# The crash flight recorder (agent/src/crash, docs/CRASH.md). The recorder is off in the
# sanitizer builds (their own handlers and shadow memory), so the child processes that crash
# run in the plain build only; the spool reader's tests run everywhere.
if(TARGET skywalking AND NOT SW_SANITIZE)
  add_executable(crash_child ${CMAKE_CURRENT_SOURCE_DIR}/integration/crash/crash_child.c)
  target_link_libraries(crash_child PRIVATE skywalking Threads::Threads)
  target_include_directories(crash_child PRIVATE ${PROJECT_SOURCE_DIR}/agent/src)
  # Frames are named module+offset: keep the frame pointers and symbols of the child.
  target_compile_options(crash_child PRIVATE -fno-omit-frame-pointer -O1)
  sw_target_defaults(crash_child)

  sw_add_unit_test(test_crash
    SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/integration/crash/test_crash.c
    LIBS skywalking swproto
    TIMEOUT 300)
  target_include_directories(test_crash PRIVATE ${PROJECT_SOURCE_DIR}/agent/src)
  target_compile_definitions(test_crash PRIVATE CRASH_CHILD="$<TARGET_FILE:crash_child>"
                                                SWTRACE="$<TARGET_FILE:swtrace>")
  add_dependencies(test_crash crash_child swtrace)
endif()

# The same through the gRPC reporter, against the project's gRPC test collector.
if(TARGET skywalking AND TARGET crash_child)
  sw_add_unit_test(test_crash_grpc
    SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/integration/crash/test_crash_grpc.c
    LIBS skywalking
    LABELS grpc
    TIMEOUT 300)
  target_include_directories(test_crash_grpc PRIVATE ${PROJECT_SOURCE_DIR}/agent/src
                             ${CMAKE_CURRENT_SOURCE_DIR}/support)
  target_compile_definitions(test_crash_grpc PRIVATE CRASH_CHILD="$<TARGET_FILE:crash_child>"
    SW_TEST_GRPC_COLLECTOR="${CMAKE_CURRENT_SOURCE_DIR}/support/grpc_collector.py")
  add_dependencies(test_crash_grpc crash_child)
endif()

# The spool reader alone: every preset, sanitizers included.
if(TARGET skywalking)
  sw_add_unit_test(test_crash_spool
    SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_crash_spool.c
            ${PROJECT_SOURCE_DIR}/agent/src/crash/crash_spool_read.c)
  target_include_directories(test_crash_spool PRIVATE ${PROJECT_SOURCE_DIR}/agent/src)

  sw_add_fuzzer(fuzz_crash_spool
    SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/fuzz_crash_spool.c
            ${PROJECT_SOURCE_DIR}/agent/src/crash/crash_spool_read.c
    CORPUS ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/corpus/crash_spool)
  target_include_directories(fuzz_crash_spool PRIVATE ${PROJECT_SOURCE_DIR}/agent/src/crash)
endif()

# The shipper in process: every preset (sw_init sends spools in the sanitizer builds too).
if(TARGET skywalking)
  sw_add_unit_test(test_crash_ship
    SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_crash_ship.c
    LIBS skywalking swproto ${CMAKE_DL_LIBS})
  target_include_directories(test_crash_ship PRIVATE ${PROJECT_SOURCE_DIR}/agent/src
                             ${CMAKE_CURRENT_SOURCE_DIR}/support)
  # The frame it ships is a function of the test binary, found by dladdr.
  target_link_options(test_crash_ship PRIVATE -rdynamic)
endif()
