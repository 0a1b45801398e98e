# Database and cache plugins of libskywalking-preload.so against real servers (label db).
#
# db_servers_start (FIXTURES_SETUP db) starts PostgreSQL, MariaDB and Redis on loopback and
# unix sockets in a temporary directory through tests/support/db/servers.sh, which writes
# their addresses to ${CMAKE_BINARY_DIR}/db-fixture/env; db_servers_stop (FIXTURES_CLEANUP db)
# stops them and removes the directory, also after failed tests. A sanitizer build of the library
# cannot be loaded into uninstrumented programs such as psql: the asan preset runs only the
# libmariadb tests of test_preload_db (pl_db is built with ASan there too), the tsan preset none.
if(NOT TARGET skywalking-preload OR SW_SANITIZE MATCHES "thread")
  return()
endif()

set(SW_DB_SERVERS_SH ${PROJECT_SOURCE_DIR}/tests/support/db/servers.sh)
set(SW_DB_FIXTURE_DIR ${CMAKE_BINARY_DIR}/db-fixture)

add_test(NAME db_servers_start
  COMMAND ${SW_DB_SERVERS_SH} start --dir ${SW_DB_FIXTURE_DIR} --lifetime 3600)
set_tests_properties(db_servers_start PROPERTIES FIXTURES_SETUP db LABELS db TIMEOUT 300)
add_test(NAME db_servers_stop COMMAND ${SW_DB_SERVERS_SH} stop --dir ${SW_DB_FIXTURE_DIR})
set_tests_properties(db_servers_stop PROPERTIES FIXTURES_CLEANUP db LABELS db TIMEOUT 120)

pkg_check_modules(PL_PQ REQUIRED IMPORTED_TARGET libpq)
pkg_check_modules(PL_MARIADB REQUIRED IMPORTED_TARGET libmariadb)
pkg_check_modules(PL_HIREDIS REQUIRED IMPORTED_TARGET hiredis)

# An ordinary service linking libpq, libmariadb and hiredis dynamically.
add_executable(pl_db integration/preload/pl_db.c integration/preload/pl_db_conn.c)
target_link_libraries(pl_db PRIVATE PkgConfig::PL_CURL PkgConfig::PL_MHD PkgConfig::PL_PQ
  PkgConfig::PL_MARIADB PkgConfig::PL_HIREDIS)
sw_target_defaults(pl_db)

sw_add_unit_test(test_preload_db
  SOURCES integration/test_preload_db.c integration/preload/pl_support.c
  LIBS swproto
  LABELS "db;preload"
  TIMEOUT 300)
target_compile_definitions(test_preload_db PRIVATE
  PL_PRELOAD_LIB="$<TARGET_FILE:skywalking-preload>"
  PL_DB="$<TARGET_FILE:pl_db>")
add_dependencies(test_preload_db skywalking-preload pl_db)
set_tests_properties(test_preload_db PROPERTIES FIXTURES_REQUIRED db
  ENVIRONMENT "SW_TEST_DB_STATE=${SW_DB_FIXTURE_DIR}")

if(SW_SANITIZE)
  # Only the tests whose every program is built here (criterion's test filter).
  set_property(TEST test_preload_db APPEND PROPERTY ENVIRONMENT
    "CRITERION_TEST_PATTERN=preload_db/libmariadb_*")
  return()
endif()

# Forks while another thread is held inside a plugin's critical section (its own calloc holds
# it there; exported so that the preload library's calls reach it).
add_executable(pl_fork integration/preload/pl_fork.c integration/preload/pl_db_conn.c)
target_link_libraries(pl_fork PRIVATE PkgConfig::PL_CURL PkgConfig::PL_MHD PkgConfig::PL_PQ
  PkgConfig::PL_MARIADB PkgConfig::PL_HIREDIS Threads::Threads ${CMAKE_DL_LIBS})
set_target_properties(pl_fork PROPERTIES ENABLE_EXPORTS ON)
sw_target_defaults(pl_fork)
target_compile_definitions(test_preload_db PRIVATE PL_FORK="$<TARGET_FILE:pl_fork>")
add_dependencies(test_preload_db pl_fork)

# CPU per traced call (PQexec SELECT 1, Redis GET, a librdkafka produce) against the same calls
# without the preload; the produce goes to the Kafka fixture's broker.
pkg_check_modules(PL_RDKAFKA REQUIRED IMPORTED_TARGET rdkafka)
sw_add_bench(plugins_bench
  SOURCES bench/plugins_bench.c
  LIBS PkgConfig::PL_PQ PkgConfig::PL_HIREDIS PkgConfig::PL_RDKAFKA
  FIXTURES db kafka
  LABELS db kafka)
target_compile_definitions(plugins_bench PRIVATE
  PL_PRELOAD_LIB="$<TARGET_FILE:skywalking-preload>"
  PL_DB_SERVERS_SH="${SW_DB_SERVERS_SH}"
  SW_TEST_KAFKA_BROKER_SH="${SW_KAFKA_BROKER_SH}")
add_dependencies(plugins_bench skywalking-preload)
if(NOT SW_SANITIZE)
  # gRPC unary calls to the C++ server of the gRPC span tests (tests/grpc_spans.cmake)
  target_compile_definitions(plugins_bench PRIVATE PL_GRPC_SERVER="$<TARGET_FILE:gs_sync_server>")
  target_link_libraries(plugins_bench PRIVATE PkgConfig::GRPC)
  add_dependencies(plugins_bench gs_sync_server)
endif()
set_tests_properties(plugins_bench_smoke PROPERTIES
  ENVIRONMENT "SW_TEST_DB_STATE=${SW_DB_FIXTURE_DIR};SW_TEST_KAFKA_DIR=${SW_KAFKA_FIXTURE_DIR}")
