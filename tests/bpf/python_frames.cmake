# Python frames under real eBPF: every CPython 3.10-3.13 found on the host calls the real
# libcudart through ctypes; the trace must name the executing Python line of each call.
causeway_test(test_python_frames_bpf LABEL bpf TIMEOUT 600
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_python_frames_bpf.cpp ${CMAKE_CURRENT_LIST_DIR}/collector_harness.cpp
  LIBS causeway_tracedb causeway_diagnosis)
add_dependencies(test_python_frames_bpf causeway)
