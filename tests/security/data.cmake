# Security tier (label `security`): hostile trace DBs and hostile JSON-RPC requests against the
# real binary (docs/SECURITY.md).
causeway_test(test_security_data LABEL security
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_security_data.cpp
  LIBS causeway_tracedb nlohmann_json::nlohmann_json)
