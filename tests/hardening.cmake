# The hardening of the build (top-level CMakeLists.txt, sw_target_defaults): readelf on the
# preload library, the shared libraries and the executables shows full RELRO (GNU_RELRO and
# BIND_NOW) and the stack protector in every preset, and _FORTIFY_SOURCE's __*_chk calls where
# it is on (no sanitizer, optimised configuration).
add_test(NAME build_hardening
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/support/check_hardening.sh
    $<$<AND:$<BOOL:${SW_FORTIFY}>,$<CONFIG:Release,RelWithDebInfo,MinSizeRel>>:--fortify>
    $<TARGET_FILE:skywalking-preload>
    $<TARGET_FILE:skywalking_shared>
    $<TARGET_FILE:kproducer_shared>
    $<TARGET_FILE:datacarrier_shared>
    $<TARGET_FILE:swtrace>
    $<TARGET_FILE:sw_demo>
    $<TARGET_FILE:test_span>
  COMMAND_EXPAND_LISTS) # an empty --fortify argument is dropped, not passed as ""
set_tests_properties(build_hardening PROPERTIES LABELS unit TIMEOUT 60)

# The layout of every C and C++ file is the pinned clang-format's (scripts/format.sh).
add_test(NAME format_check COMMAND ${PROJECT_SOURCE_DIR}/scripts/format.sh --check)
set_tests_properties(format_check PROPERTIES LABELS unit TIMEOUT 120)
