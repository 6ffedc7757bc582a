# End-to-end tests of `causeway mcp` with real MCP clients (official TypeScript SDK, the MCP
# Inspector CLI, the conformance suite). They need `npm ci --prefix tests/e2e`; without it they
# exit 77 (skipped) saying so.
if(TARGET causeway_synth)
  add_executable(mcp_fixture ${CMAKE_CURRENT_LIST_DIR}/mcp_fixture.cpp)
  target_link_libraries(mcp_fixture PRIVATE causeway_synth causeway_tracedb)
  foreach(script mcp_stdio mcp_https mcp_examples mcp_conformance mcp_merged mcp_assistant mcp_claude_cli mcp_inspector)
    if(EXISTS ${CMAKE_CURRENT_LIST_DIR}/${script}.test.mjs)
      add_test(NAME e2e_${script}
               COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/run-node.sh ${CMAKE_CURRENT_LIST_DIR}/${script}.test.mjs)
      set_tests_properties(e2e_${script} PROPERTIES LABELS e2e SKIP_RETURN_CODE 77 TIMEOUT 300
        ENVIRONMENT "CAUSEWAY_BIN=$<TARGET_FILE:causeway>;CAUSEWAY_MCP_FIXTURE=$<TARGET_FILE:mcp_fixture>;CAUSEWAY_SOURCE_DIR=${PROJECT_SOURCE_DIR}")
    endif()
  endforeach()
  # ~28 Inspector CLI runs, each a fresh Node process and connection (~1.5 s on an idle core).
  if(TEST e2e_mcp_inspector)
    set_tests_properties(e2e_mcp_inspector PROPERTIES TIMEOUT 900)
  endif()
  # Two Claude Code clients, each started ~12 times; slow on a busy machine.
  if(TEST e2e_mcp_claude_cli)
    set_tests_properties(e2e_mcp_claude_cli PROPERTIES TIMEOUT 600)
  endif()
endif()
