# `causeway report` loaded in headless Chromium, offline (tests/e2e/report_browser.py). Skipped
# (77) with the reason when Chromium or a network namespace is missing.
if(TARGET causeway_exporters)
  find_package(Python3 COMPONENTS Interpreter)
  if(Python3_Interpreter_FOUND)
    add_test(NAME e2e_report_browser COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/report_browser.py)
    set_tests_properties(e2e_report_browser PROPERTIES LABELS e2e SKIP_RETURN_CODE 77 TIMEOUT 900
      ENVIRONMENT "CAUSEWAY_BIN=$<TARGET_FILE:causeway>")
  endif()
endif()
