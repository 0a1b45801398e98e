# gRPC client and server spans of libskywalking-preload.so (agent/preload/preload_grpc.c): a
# C++ server and client built here from Debian's libgrpc++ (gs_echo.proto), run unmodified
# under the preload library and reporting to the project's gRPC collector; a Python peer traced
# by SkyWalking's Python agent (the project's venv, scripts/fetch-tools.sh) for the traces that
# cross languages. The driver (test_grpc_spans.py) checks the span trees the collector records.
# Real servers: plain builds only (a sanitizer build of the preload library cannot be loaded
# into uninstrumented programs).
if(NOT SW_SANITIZE)
  find_program(GS_PROTOC protoc REQUIRED)
  find_program(GS_GRPC_CPP_PLUGIN grpc_cpp_plugin REQUIRED)
  pkg_check_modules(GS_GRPCPP REQUIRED IMPORTED_TARGET grpc++ protobuf)
  find_program(SW_PYTHON3 NAMES python3 REQUIRED)

  set(gs_dir ${CMAKE_CURRENT_SOURCE_DIR}/integration/grpc_spans)
  set(gs_gen ${CMAKE_CURRENT_BINARY_DIR}/grpc_spans_gen)
  set(gs_srcs ${gs_gen}/gs_echo.pb.cc ${gs_gen}/gs_echo.grpc.pb.cc)
  add_custom_command(
    OUTPUT ${gs_srcs} ${gs_gen}/gs_echo.pb.h ${gs_gen}/gs_echo.grpc.pb.h
    COMMAND ${CMAKE_COMMAND} -E make_directory ${gs_gen}
    COMMAND ${GS_PROTOC} -I${gs_dir} --cpp_out=${gs_gen} --grpc_out=${gs_gen}
            --plugin=protoc-gen-grpc=${GS_GRPC_CPP_PLUGIN} ${gs_dir}/gs_echo.proto
    DEPENDS ${gs_dir}/gs_echo.proto
    COMMENT "gs_echo.proto: C++ stubs of the gRPC span tests")
  add_library(gs_echo_proto STATIC ${gs_srcs})
  target_include_directories(gs_echo_proto PUBLIC ${gs_gen})
  target_link_libraries(gs_echo_proto PUBLIC PkgConfig::GS_GRPCPP)
  sw_target_defaults(gs_echo_proto)

  add_executable(gs_server ${gs_dir}/gs_server.cpp)
  target_link_libraries(gs_server PRIVATE gs_echo_proto Threads::Threads)
  sw_target_defaults(gs_server)
  add_executable(gs_sync_server ${gs_dir}/gs_sync_server.cpp)
  target_link_libraries(gs_sync_server PRIVATE gs_echo_proto Threads::Threads)
  sw_target_defaults(gs_sync_server)
  # A C program on the C API with a callback completion queue (functor tags).
  add_executable(gs_c_client ${gs_dir}/gs_c_client.c)
  target_link_libraries(gs_c_client PRIVATE PkgConfig::GRPC Threads::Threads)
  sw_target_defaults(gs_c_client)
  add_executable(gs_client ${gs_dir}/gs_client.cpp)
  target_link_libraries(gs_client PRIVATE gs_echo_proto skywalking_shared Threads::Threads)
  sw_target_defaults(gs_client)

  add_test(NAME grpc_spans
    COMMAND /usr/bin/python3 ${gs_dir}/test_grpc_spans.py
            --preload $<TARGET_FILE:skywalking-preload>
            --server $<TARGET_FILE:gs_server> --sync-server $<TARGET_FILE:gs_sync_server>
            --client $<TARGET_FILE:gs_client> --c-client $<TARGET_FILE:gs_c_client>
            --collector ${CMAKE_CURRENT_SOURCE_DIR}/support/grpc_collector.py
            --py-peer ${gs_dir}/gs_py_peer.py)
  set_tests_properties(grpc_spans PROPERTIES LABELS "preload;grpc" TIMEOUT 300)
  # The driver runs the targets it names; building the test builds them.
  add_custom_target(grpc_spans_programs ALL DEPENDS skywalking-preload gs_server gs_sync_server gs_client
                    gs_c_client)
endif()

# The plugin's reading of a server call's metadata, fuzzed (every preset; libFuzzer with clang).
sw_add_fuzzer(fuzz_grpc_metadata
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/fuzz_grpc_metadata.c
          ${PROJECT_SOURCE_DIR}/agent/preload/preload_grpc_md.c
  LIBS skywalking PkgConfig::GRPC
  CORPUS ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/corpus/fuzz_grpc_metadata)
target_include_directories(fuzz_grpc_metadata PRIVATE ${PROJECT_SOURCE_DIR}/agent/preload)
