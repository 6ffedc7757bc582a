# MCP server: protocol core, tools, schemas, security helpers, golden transcripts.
if(TARGET causeway_mcp)
  causeway_test(test_mcp LABEL unit
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_mcp_jsonrpc.cpp ${CMAKE_CURRENT_LIST_DIR}/test_mcp_json_schema.cpp
            ${CMAKE_CURRENT_LIST_DIR}/test_mcp_protocol.cpp ${CMAKE_CURRENT_LIST_DIR}/test_mcp_tools.cpp
            ${CMAKE_CURRENT_LIST_DIR}/test_mcp_security.cpp ${CMAKE_CURRENT_LIST_DIR}/test_mcp_golden.cpp
            ${CMAKE_CURRENT_LIST_DIR}/test_mcp_fixture.cpp
    LIBS causeway_mcp)
endif()
