# /metrics' request families (GenAI server histograms, request counters, time lost per
# cause, label caps) and the trace's adapter that feeds them.
if(TARGET causeway_metrics AND TARGET causeway_synth)
  causeway_test(test_request_metrics LABEL unit
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_request_metrics.cpp
    LIBS causeway_metrics causeway_collector_core causeway_requests causeway_synth)
endif()
if(TARGET causeway_metrics)
  causeway_test(test_prometheus_genai_examples LABEL unit
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_prometheus_genai_examples.cpp
    LIBS causeway_metrics nlohmann_json::nlohmann_json)
endif()
