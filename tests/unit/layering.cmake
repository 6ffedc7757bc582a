# The diagnosis wing has no include cycle between its modules (issue #21): a header and its
# .cpp are one module; tests/unit/check_include_cycles.py prints every cycle with the #include
# lines that close it (docs/DIAGNOSIS.md "Layers").
find_package(Python3 COMPONENTS Interpreter QUIET)
if(Python3_Interpreter_FOUND)
  add_test(NAME diagnosis_include_cycles
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/check_include_cycles.py ${PROJECT_SOURCE_DIR} diagnosis)
  set_tests_properties(diagnosis_include_cycles PROPERTIES LABELS unit)
else()
  add_test(NAME diagnosis_include_cycles COMMAND ${CMAKE_COMMAND} -E echo "skipped: no python3 (scripts/install-deps.sh --tests)")
  set_tests_properties(diagnosis_include_cycles PROPERTIES LABELS unit SKIP_REGULAR_EXPRESSION "skipped:")
endif()
