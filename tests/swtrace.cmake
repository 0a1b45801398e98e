# swtrace (agent/tools): the viewer for segment files.
if(TARGET swtrace AND TARGET swtrace_core)
  sw_add_unit_test(test_swtrace
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/unit/test_swtrace.c
    LIBS swtrace_core)
  # The test runs the real binary; built before the test by the dependency below.
  target_compile_definitions(test_swtrace PRIVATE SWTRACE_PATH="$<TARGET_FILE:swtrace>")
  add_dependencies(test_swtrace swtrace)

  # The reader and joiner sources are compiled into the fuzzer itself (not linked from
  # swtrace_core) so that libFuzzer's coverage instrumentation (-fsanitize=fuzzer, applied to
  # the fuzzer's own sources only) sees their branches.
  set(swtrace_dir ${PROJECT_SOURCE_DIR}/agent/tools)
  sw_add_fuzzer(fuzz_swtrace_read
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/fuzz/fuzz_swtrace_read.c
            ${swtrace_dir}/swtrace_read.c ${swtrace_dir}/swtrace_tree.c
            ${swtrace_dir}/swtrace_print.c ${swtrace_dir}/swtrace_json.c
    LIBS swproto
    CORPUS ${CMAKE_CURRENT_LIST_DIR}/fuzz/corpus/swtrace_read)
  target_include_directories(fuzz_swtrace_read PRIVATE ${swtrace_dir})
endif()

# The manual page (agent/tools/swtrace.1.in, installed) and the README describe what
# `swtrace --help` prints.
add_test(NAME swtrace_docs
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/support/check_swtrace_docs.sh $<TARGET_FILE:swtrace>
          ${PROJECT_SOURCE_DIR}/agent/tools/swtrace.1.in ${PROJECT_SOURCE_DIR}/README.md)
set_tests_properties(swtrace_docs PROPERTIES LABELS unit TIMEOUT 60)
