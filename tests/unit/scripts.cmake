# The shipped scripts' first-use edges (issue #38): gpu-check.sh --help and its default binary,
# package.sh's up-front check (tests/unit/test_scripts_first_use.sh, on copies of the scripts).
add_test(NAME scripts_first_use COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/test_scripts_first_use.sh ${PROJECT_SOURCE_DIR})
set_tests_properties(scripts_first_use PROPERTIES LABELS unit TIMEOUT 60)
# The fixed demo clock makes two runs' answers byte-identical (tests/golden/compare_binaries.sh).
add_test(NAME golden_reproducible COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/test_golden_reproducible.sh ${PROJECT_SOURCE_DIR} $<TARGET_FILE:causeway>)
set_tests_properties(golden_reproducible PROPERTIES LABELS unit TIMEOUT 600)
