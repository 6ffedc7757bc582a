# Collector tests under real eBPF (root): tests exit 77 (skipped, with the reason) when BPF is
# unavailable. They drive `causeway trace` against tests/testprogs (fake libcudart/libcuda/
# libnccl + cw_workload) and, when installed, the real CUDA 13 libcudart.
causeway_test(test_collector_bpf LABEL bpf TIMEOUT 900
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_collector_bpf.cpp ${CMAKE_CURRENT_LIST_DIR}/collector_harness.cpp
  LIBS causeway_tracedb causeway_diagnosis)
add_dependencies(test_collector_bpf causeway causeway_testprogs)
# Tenants: cgroup ids of every thread seen, resolved to path, container and pod.
causeway_test(test_collector_cgroups_bpf LABEL bpf TIMEOUT 300
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_collector_cgroups_bpf.cpp ${CMAKE_CURRENT_LIST_DIR}/pod_cgroup.cpp
          ${CMAKE_CURRENT_LIST_DIR}/collector_harness.cpp
  LIBS causeway_tracedb causeway_collector_core)
add_dependencies(test_collector_cgroups_bpf causeway causeway_testprogs)
# TCP retransmits attributed to the socket's owner, IPv4 and IPv6 (needs nft).
causeway_test(test_collector_net_bpf LABEL bpf TIMEOUT 300
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_collector_net_bpf.cpp ${CMAKE_CURRENT_LIST_DIR}/netns_support.cpp
          ${CMAKE_CURRENT_LIST_DIR}/collector_harness.cpp
  LIBS causeway_tracedb)
add_dependencies(test_collector_net_bpf causeway causeway_testprogs)
# Root (unshare/setns of a network namespace), no BPF: the engine scraper reaches a server in
# a container's network namespace.
causeway_test(test_scraper_netns LABEL bpf SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_scraper_netns.cpp
  LIBS causeway_collector_core causeway_collector TIMEOUT 60)
# The CPU watch with two traced threads waiting on one CPU (bpf/sched_watch.bpf.h): a hog
# taking the CPU from an untraced task is recorded, and named by the stolen-time ranking.
causeway_test(test_sched_watch_bpf LABEL bpf TIMEOUT 120
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_sched_watch_bpf.cpp ${CMAKE_CURRENT_LIST_DIR}/collector_harness.cpp
  LIBS causeway_tracedb causeway_diagnosis)
add_dependencies(test_sched_watch_bpf causeway causeway_testprogs)
