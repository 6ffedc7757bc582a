# The map stays true (issue #38): every path and code name docs/ARCHITECTURE.md cites exists
# (tests/unit/check_architecture_doc.py), and every SELECT over `events` / `v_calls` in the
# code names only columns of tracedb/event_columns.h / schemas/trace.sql
# (tests/unit/check_event_selects.py). The house rules hold: no function body over 100 lines
# outside declared data tables (tests/unit/check_function_length.py), and no event argument read
# by position outside the code that defines or fills the slots (tests/unit/check_positional_args.py).
# "Which entry is the biggest" is written only as common/argmax.h's argmax_by: no std::max_element
# or hand-written "best so far" loop elsewhere (tests/unit/check_argmax.py).
# The newcomer's three recipes (a request cause, an MCP tool, a shipped table) list the files the
# code makes them touch (tests/unit/check_recipes.py).
find_package(Python3 COMPONENTS Interpreter QUIET)
foreach(check architecture_doc event_selects function_length positional_args recipes argmax)
  if(Python3_Interpreter_FOUND)
    add_test(NAME docs_${check} COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/check_${check}.py ${PROJECT_SOURCE_DIR})
    set_tests_properties(docs_${check} PROPERTIES LABELS unit TIMEOUT 120)
  else()
    add_test(NAME docs_${check} COMMAND ${CMAKE_COMMAND} -E echo "skipped: no python3 (scripts/install-deps.sh --tests)")
    set_tests_properties(docs_${check} PROPERTIES LABELS unit SKIP_REGULAR_EXPRESSION "skipped:")
  endif()
endforeach()
