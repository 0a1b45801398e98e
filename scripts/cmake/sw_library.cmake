# How the project's three libraries (libdatacarrier, libkproducer, libskywalking) are built and
# installed. Included by the top-level CMakeLists.txt; used by datacarrier/, producer/, agent/.
#
# Each library compiles its sources once, into an OBJECT library, and makes from those objects:
# - a static library, the in-tree target the tests link (name: the library's name) and the
#   installed lib<name>.a (exported as skywalking::<name>_static);
# - a shared library lib<name>.so.<major> (target <name>_shared, exported as
#   skywalking::<name>) that exports exactly the functions of the public header: a version
#   script (<folder>/<name>.map) lists them under the version node <NAME>_<major>; everything
#   else, including the static libraries linked into it, stays local.
# tests/install.cmake checks the exports against the public header with nm.

set(SW_EXPORT_SET skywalking-targets)

# sw_add_shared_library(<target> OUTPUT_NAME <name> VERSION_SCRIPT <file>
#                       SOURCES <src or $<TARGET_OBJECTS:...>>... [LINK <lib>...])
# LINK: what the shared library is linked with, privately (static libraries are linked into it).
function(sw_add_shared_library target)
  cmake_parse_arguments(L "" "OUTPUT_NAME;VERSION_SCRIPT" "SOURCES;LINK" ${ARGN})
  if(NOT EXISTS ${L_VERSION_SCRIPT})
    message(FATAL_ERROR "${target}: version script ${L_VERSION_SCRIPT} not found")
  endif()
  add_library(${target} SHARED ${L_SOURCES})
  set_target_properties(${target} PROPERTIES
    OUTPUT_NAME ${L_OUTPUT_NAME}
    EXPORT_NAME ${L_OUTPUT_NAME}
    VERSION ${PROJECT_VERSION}
    SOVERSION ${SW_SOVERSION}
    LINK_DEPENDS ${L_VERSION_SCRIPT})
  # -Bsymbolic-functions: the library's calls to its own exported functions bind inside it.
  # Another copy of the API in the process (libskywalking-preload.so exports the functions of
  # skywalking.h, so that a program's calls reach the preloaded agent) then never receives
  # half of this library's calls.
  target_link_options(${target} PRIVATE -Wl,--version-script=${L_VERSION_SCRIPT}
                      -Wl,-Bsymbolic-functions)
  if(NOT SW_SANITIZE)
    # Every undefined symbol must come from a library it links (not possible with a sanitizer
    # runtime, which the executable provides).
    target_link_options(${target} PRIVATE -Wl,-z,defs)
  endif()
  target_link_libraries(${target} PRIVATE ${L_LINK})
  sw_target_defaults(${target})
  install(TARGETS ${target} EXPORT ${SW_EXPORT_SET}
          LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
endfunction()

# sw_install_static_library(<target>): installs lib<name>.a, exported as skywalking::<name>_static.
function(sw_install_static_library target)
  get_target_property(name ${target} OUTPUT_NAME)
  if(NOT name)
    set(name ${target})
  endif()
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${name}_static)
  install(TARGETS ${target} EXPORT ${SW_EXPORT_SET}
          ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
endfunction()

# sw_public_include(<target> <dir>): the public header directory, in the build tree and installed.
function(sw_public_include target dir)
  target_include_directories(${target} PUBLIC
    $<BUILD_INTERFACE:${dir}> $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
endfunction()

# sw_install_pkgconfig(<name>): installs <name>.pc, made from <current folder>/<name>.pc.in at
# install time, so that the paths in it follow `cmake --install --prefix P` and DESTDIR (and
# CPack's staging) instead of the prefix configured. Each install writes its own copy under the
# build tree (keyed by destination), so that concurrent installs do not share a file.
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}" OR IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
  message(FATAL_ERROR "CMAKE_INSTALL_LIBDIR and CMAKE_INSTALL_INCLUDEDIR must be relative to "
                      "the prefix (got '${CMAKE_INSTALL_LIBDIR}', '${CMAKE_INSTALL_INCLUDEDIR}')")
endif()
function(sw_install_pkgconfig name)
  set(in ${CMAKE_CURRENT_SOURCE_DIR}/${name}.pc.in)
  if(NOT EXISTS ${in})
    message(FATAL_ERROR "sw_install_pkgconfig(${name}): ${in} not found")
  endif()
  set(stage ${CMAKE_CURRENT_BINARY_DIR}/pkgconfig-install)
  install(CODE "
    set(SW_PC_PREFIX \"\${CMAKE_INSTALL_PREFIX}\")
    set(SW_PC_LIBDIR \"${CMAKE_INSTALL_LIBDIR}\")
    set(SW_PC_INCLUDEDIR \"${CMAKE_INSTALL_INCLUDEDIR}\")
    set(SW_PC_VERSION \"${PROJECT_VERSION}\")
    string(MD5 sw_pc_key \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}\")
    configure_file(\"${in}\" \"${stage}/\${sw_pc_key}/${name}.pc\" @ONLY)
    file(INSTALL DESTINATION \"\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/pkgconfig\"
         TYPE FILE FILES \"${stage}/\${sw_pc_key}/${name}.pc\")")
endfunction()
