# The installed CMake package and the Debian package. Included at the end of the top-level
# CMakeLists.txt, after every installed target exists.
#
# find_package(skywalking CONFIG REQUIRED) gives:
#   skywalking::skywalking    libskywalking.so   (skywalking.h, skywalking.hpp)
#   skywalking::kproducer     libkproducer.so    (kproducer.h)
#   skywalking::datacarrier   libdatacarrier.so  (datacarrier.h)
#   skywalking::skywalking_static, skywalking::kproducer_static, skywalking::datacarrier_static:
#                             the static libraries, with their dependencies as link items
include(CMakePackageConfigHelpers)

set(SW_CMAKE_PACKAGE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/skywalking)
install(EXPORT ${SW_EXPORT_SET}
        NAMESPACE skywalking::
        FILE skywalking-targets.cmake
        DESTINATION ${SW_CMAKE_PACKAGE_DIR})
configure_package_config_file(
  ${CMAKE_CURRENT_LIST_DIR}/skywalking-config.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/skywalking-config.cmake
  INSTALL_DESTINATION ${SW_CMAKE_PACKAGE_DIR})
# 0.x: a minor version may break the API, so only the same minor version is compatible.
write_basic_package_version_file(
  ${CMAKE_CURRENT_BINARY_DIR}/skywalking-config-version.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/skywalking-config.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/skywalking-config-version.cmake
        DESTINATION ${SW_CMAKE_PACKAGE_DIR})

# cpack -G DEB (run in the build directory) makes skywalking-c_<version>_<arch>.deb with the
# layout of `cmake --install` under /usr; tests/install.cmake checks it with dpkg-deb -c.
set(CPACK_PACKAGE_NAME skywalking-c)
set(CPACK_PACKAGE_VENDOR "skywalking-c")
set(CPACK_PACKAGE_CONTACT "skywalking-c maintainers <skywalking-c@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "Tracing agent for C and C++ programs speaking Apache SkyWalking's v3 protocol")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_GENERATOR DEB)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION libs)
# The run-time libraries the shared objects need, found by dpkg-shlibdeps (Debian dpkg-dev).
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
include(CPack)
