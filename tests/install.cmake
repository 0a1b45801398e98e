# What the project installs (scripts/cmake/sw_library.cmake, sw_package.cmake), label install:
# - library_exports_<lib>: each shared library exports exactly the functions of its public
#   header (nm -D --defined-only against gcc -aux-info of the header); every preset.
#   library_exports_preload: libskywalking-preload.so exports its interposed functions and the
#   functions of skywalking.h, all unversioned.
# - install_consumers: `cmake --install --prefix <tmp>`, then a C program built with pkg-config
#   and a C++ project built with find_package, outside the source tree, run and decoded with the
#   installed swtrace; without a sanitizer only (an instrumented library needs its runtime in
#   the consumer). A few seconds.
# - package_deb: `cpack -G DEB` and dpkg-deb -c against the install layout; without a sanitizer.
# The install tests read the whole build tree: ctest runs them after the build.
foreach(lib skywalking kproducer datacarrier)
  if(lib STREQUAL "skywalking")
    set(header ${PROJECT_SOURCE_DIR}/agent/include/skywalking.h)
  elseif(lib STREQUAL "kproducer")
    set(header ${PROJECT_SOURCE_DIR}/producer/include/kproducer.h)
  else()
    set(header ${PROJECT_SOURCE_DIR}/datacarrier/include/datacarrier.h)
  endif()
  add_test(NAME library_exports_${lib}
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/install/check_exports.sh
            $<TARGET_FILE:${lib}_shared> ${header})
  set_tests_properties(library_exports_${lib} PROPERTIES LABELS install TIMEOUT 60)
endforeach()
# libskywalking-preload.so: the interposed functions and the API of skywalking.h, unversioned.
if(TARGET skywalking-preload)
  add_test(NAME library_exports_preload
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/install/check_exports.sh
            $<TARGET_FILE:skywalking-preload> ${PROJECT_SOURCE_DIR}/agent/include/skywalking.h
            ${PROJECT_SOURCE_DIR}/agent/preload/exports.map)
  set_tests_properties(library_exports_preload PROPERTIES LABELS install TIMEOUT 60)
endif()

if(NOT SW_SANITIZE)
  find_program(SW_PYTHON3 NAMES python3 REQUIRED)
  add_test(NAME install_consumers
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/install/check_install.sh
            ${CMAKE_COMMAND} ${PROJECT_BINARY_DIR} ${CMAKE_INSTALL_LIBDIR} ${SW_SOVERSION})
  set_tests_properties(install_consumers PROPERTIES LABELS install TIMEOUT 300)

  find_program(SW_DPKG_DEB NAMES dpkg-deb REQUIRED)
  add_test(NAME package_deb
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/install/check_deb.sh
            ${CMAKE_COMMAND} ${CMAKE_CPACK_COMMAND} ${PROJECT_BINARY_DIR} ${SW_SOVERSION})
  set_tests_properties(package_deb PROPERTIES LABELS install TIMEOUT 300)
endif()
