# The C++ API (agent/include/skywalking.hpp, header-only over skywalking.h): a criterion test
# built as C++17 with the preset's C++ compiler (g++ in default and tsan; clang++ in asan,
# whose ASan runtime must match the C code's), and in every preset a g++ compile of the same
# test, so that the header is checked by g++ wherever the run uses clang++.
sw_add_unit_test(test_skywalking_hpp
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_skywalking_hpp.cpp
  LIBS skywalking swproto)

find_program(SW_GXX NAMES g++ REQUIRED DOC "g++, to compile the C++ API with GCC in every preset")
pkg_get_variable(SW_CRITERION_INCLUDEDIR criterion includedir)
add_test(NAME test_skywalking_hpp_gxx_compile
  COMMAND ${SW_GXX} -std=c++17 -Wall -Wextra -Werror -fsyntax-only
          -I${PROJECT_SOURCE_DIR}/agent/include -I${PROJECT_BINARY_DIR}/proto/gen
          -I${SW_CRITERION_INCLUDEDIR}
          ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_skywalking_hpp.cpp)
set_tests_properties(test_skywalking_hpp_gxx_compile PROPERTIES LABELS unit TIMEOUT 120)
