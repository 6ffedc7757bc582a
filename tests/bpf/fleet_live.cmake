# NCCL ranks traced after their ncclCommInitRank (ranks from RANK/WORLD_SIZE in /proc/PID/environ),
# on one host and split over two "hosts" (UTS namespaces) merged with `causeway merge`.
# Root + BPF, else skipped (77); `unshare` for the two-host case.
causeway_test(test_fleet_live LABEL bpf TIMEOUT 300
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_fleet_live.cpp ${CMAKE_CURRENT_LIST_DIR}/collector_harness.cpp
  LIBS causeway_tracedb)
add_dependencies(test_fleet_live causeway causeway_testprogs)
