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
