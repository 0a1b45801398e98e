# Request contexts in real event loops (label eventloop): libevent evhttp servers traced with the
# context API (tests/integration/eventloop/evl.c), 200 slow requests interleaved on one thread.
# libevent (Debian libevent-dev) is optional: without it these tests are not built.
pkg_check_modules(SW_EVENT IMPORTED_TARGET libevent)
if(NOT SW_EVENT_FOUND)
  message(STATUS "libevent not found (Debian: libevent-dev): the event-loop tests are not built")
  return()
endif()

add_library(evl_support STATIC integration/eventloop/evl.c)
target_include_directories(evl_support PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/integration)
target_link_libraries(evl_support PUBLIC PkgConfig::SW_EVENT Threads::Threads)
target_include_directories(evl_support PRIVATE ${PROJECT_SOURCE_DIR}/agent/include)
sw_target_defaults(evl_support)

# In one process, statically linked: runs in every preset (a few seconds; under the sanitizers
# too).
sw_add_unit_test(test_evhttp_context
  SOURCES integration/test_evhttp_context.c
  LIBS evl_support skywalking
  LABELS eventloop
  TIMEOUT 300)

# The example agent/examples/evhttp_server.c, driven by the real curl CLI (--parallel) and read
# back with swtrace; a few seconds.
if(TARGET sw_evhttp_server AND TARGET swtrace)
  add_test(NAME evhttp_example
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/integration/eventloop/check_evhttp_example.sh
            $<TARGET_FILE:sw_evhttp_server> $<TARGET_FILE:swtrace>)
  set_tests_properties(evhttp_example PROPERTIES LABELS eventloop TIMEOUT 180)
endif()

# sw_context_attach with the preload library: evl_redis links libskywalking.so and runs with
# libskywalking-preload.so preloaded against the db fixture's Redis (tests/db.cmake); plain
# builds only, like the other LD_PRELOAD tests.
if(TARGET skywalking-preload AND NOT SW_SANITIZE AND TARGET PkgConfig::PL_HIREDIS)
  add_executable(evl_redis integration/eventloop/evl_redis.c)
  target_link_libraries(evl_redis PRIVATE evl_support skywalking_shared PkgConfig::PL_HIREDIS)
  sw_target_defaults(evl_redis)

  sw_add_unit_test(test_evhttp_preload
    SOURCES integration/test_evhttp_preload.c integration/preload/pl_support.c
    LIBS swproto
    LABELS "eventloop;db;preload"
    TIMEOUT 300)
  target_include_directories(test_evhttp_preload PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/integration)
  target_compile_definitions(test_evhttp_preload PRIVATE
    PL_PRELOAD_LIB="$<TARGET_FILE:skywalking-preload>"
    EVL_REDIS="$<TARGET_FILE:evl_redis>")
  add_dependencies(test_evhttp_preload skywalking-preload evl_redis)
  set_tests_properties(test_evhttp_preload PROPERTIES FIXTURES_REQUIRED db
    ENVIRONMENT "SW_TEST_DB_STATE=${SW_DB_FIXTURE_DIR}")
endif()
