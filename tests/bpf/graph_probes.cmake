# CUDA graph capture / instantiation / launch probes under real eBPF (root): the fake
# libcudart and libcuda of tests/testprogs, and the real CUDA 13 libcudart when installed.
causeway_test(test_graph_probes_bpf LABEL bpf TIMEOUT 300
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_graph_probes_bpf.cpp ${CMAKE_CURRENT_LIST_DIR}/collector_harness.cpp
  LIBS causeway_tracedb)
add_dependencies(test_graph_probes_bpf causeway causeway_testprogs)
