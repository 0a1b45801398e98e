# The README and docs/*.md against the tree (tests/support/check_docs.py): relative links and
# anchors, the Quick start's two commands, the settings named against the agent's parser (both
# directions: docs/CONFIGURATION.md's table holds every setting the parser reads), and the
# names docs/ARCHITECTURE.md cites against the sources. Cheap, no server.
find_program(SW_PYTHON3 NAMES python3 REQUIRED)
foreach(check links quickstart settings names)
  add_test(NAME docs_${check}
    COMMAND ${SW_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/support/check_docs.py ${PROJECT_SOURCE_DIR}
            ${check})
  set_tests_properties(docs_${check} PROPERTIES LABELS unit TIMEOUT 60)
endforeach()

# The floors of agent/src (docs/ARCHITECTURE.md): no #include runs up or sideways.
add_test(NAME agent_floors
  COMMAND ${SW_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/support/check_floors.py ${PROJECT_SOURCE_DIR})
set_tests_properties(agent_floors PROPERTIES LABELS unit TIMEOUT 60)
