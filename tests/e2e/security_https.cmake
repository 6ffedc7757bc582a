# The HTTPS transport under attack (issues 24 and 25): a real `causeway mcp --http` process,
# real sockets, a client using only Node's built-in modules (no npm packages). Label
# `security`; without a node binary the tests are skipped with the reason.
if(TARGET mcp_fixture)
  foreach(script https_slowloris https_chunked_body https_port_in_use https_refusals https_per_peer https_head_too_large)
    add_test(NAME security_${script}
             COMMAND sh -c "command -v node >/dev/null || { echo 'SKIP: no node binary (install Node >= 20)' >&2; exit 77; }; exec node \"$0\""
                     ${CMAKE_CURRENT_LIST_DIR}/security/${script}.test.mjs)
    set_tests_properties(security_${script} PROPERTIES LABELS security SKIP_RETURN_CODE 77 TIMEOUT 120
      ENVIRONMENT "CAUSEWAY_BIN=$<TARGET_FILE:causeway>;CAUSEWAY_MCP_FIXTURE=$<TARGET_FILE:mcp_fixture>")
  endforeach()
endif()
