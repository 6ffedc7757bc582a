# Request causes over the whole session's evidence, culprits by time never the tracer, one
# arbitration per gap (docs/INFERENCE.md "Causes keyed to requests").
causeway_test(test_request_causes_evidence LABEL unit
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_requests_causes_evidence.cpp LIBS causeway_diagnosis causeway_requests)
