# `causeway demo` sizing (synth/).
causeway_test(test_demo_events LABEL unit
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_demo_events.cpp LIBS causeway_synth causeway_tracedb)
