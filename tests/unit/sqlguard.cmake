# sqlguard: the text layer needs no DB; the layer, API and CLI tests build fixture DBs.
if(TARGET causeway_sqlguard)
  causeway_test(test_sqlguard_text LABEL unit
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_sqlguard_lexer.cpp ${CMAKE_CURRENT_LIST_DIR}/test_sqlguard_validator.cpp
    LIBS causeway_sqlguard)
  causeway_test(test_sqlguard_layers LABEL unit TIMEOUT 300
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_sqlguard_layers.cpp LIBS causeway_sqlguard)
  causeway_test(test_sqlguard_guard LABEL unit
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_sqlguard_guard.cpp LIBS causeway_sqlguard)
  causeway_test(test_sqlguard_cli LABEL unit
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_sqlguard_cli.cpp LIBS nlohmann_json::nlohmann_json)
  add_dependencies(test_sqlguard_cli causeway)
endif()
