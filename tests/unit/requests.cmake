causeway_test(test_requests LABEL unit
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_requests_tracker.cpp ${CMAKE_CURRENT_LIST_DIR}/test_requests_tokens.cpp ${CMAKE_CURRENT_LIST_DIR}/test_requests_latency.cpp ${CMAKE_CURRENT_LIST_DIR}/test_engine_metrics.cpp ${CMAKE_CURRENT_LIST_DIR}/test_request_engine_causes.cpp ${CMAKE_CURRENT_LIST_DIR}/test_forward_passes.cpp ${CMAKE_CURRENT_LIST_DIR}/test_request_network.cpp ${CMAKE_CURRENT_LIST_DIR}/test_requests_arrival.cpp
  LIBS causeway_diagnosis causeway_requests)
causeway_test(test_request_scenarios LABEL unit
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_request_scenarios.cpp LIBS causeway_requests causeway_synth causeway_mcp)
causeway_test(test_requests_hostile LABEL unit
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_requests_hostile.cpp LIBS causeway_diagnosis causeway_requests causeway_synth causeway_mcp)
# `causeway requests` run as a user runs it: the binary's JSON and usage errors.
causeway_test(test_requests_cli LABEL unit SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_requests_cli.cpp LIBS causeway_diagnosis)
add_dependencies(test_requests_cli causeway)
