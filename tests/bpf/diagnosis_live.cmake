# Planted incidents under real eBPF, diagnosed end to end (issue #6): cpu_contention (a hog on
# the workload's CPU), nccl_straggler (a late rank among 4), io_contention (fsync on the
# calling thread), lock_contention (a sibling thread's mutex). Root + BPF, else skipped (77).
causeway_test(test_diagnosis_live LABEL bpf TIMEOUT 300
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_diagnosis_live.cpp ${CMAKE_CURRENT_LIST_DIR}/diagnosis_live_support.cpp
          ${CMAKE_CURRENT_LIST_DIR}/collector_harness.cpp
  LIBS causeway_tracedb causeway_diagnosis)
add_dependencies(test_diagnosis_live causeway causeway_testprogs)

# The GPU waiting for the host (issue #15): dataloader_starvation and host_bound from a real
# CPython training loop (tests/testprogs/training_loop.py), launch_bound from cw_workload.
causeway_test(test_diagnosis_live_pipeline LABEL bpf TIMEOUT 300
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_diagnosis_live_pipeline.cpp ${CMAKE_CURRENT_LIST_DIR}/diagnosis_live_support.cpp
          ${CMAKE_CURRENT_LIST_DIR}/collector_harness.cpp
  LIBS causeway_tracedb causeway_diagnosis)
add_dependencies(test_diagnosis_live_pipeline causeway causeway_testprogs)

# Culprits outside the traced job (issue #15): a hog in another tenant's container cgroup, and
# TCP retransmits over IPv6 in a lossy network namespace (nftables).
causeway_test(test_diagnosis_live_hosts LABEL bpf TIMEOUT 300
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_diagnosis_live_hosts.cpp ${CMAKE_CURRENT_LIST_DIR}/diagnosis_live_support.cpp
          ${CMAKE_CURRENT_LIST_DIR}/netns_support.cpp ${CMAKE_CURRENT_LIST_DIR}/pod_cgroup.cpp
          ${CMAKE_CURRENT_LIST_DIR}/collector_harness.cpp
  LIBS causeway_tracedb causeway_diagnosis causeway_collector_core)
add_dependencies(test_diagnosis_live_hosts causeway causeway_testprogs)

# Incidents that last until the trace is stopped (issue #21, the watermark rule): a CPU hog on
# the thread's core during a spinning sync, and page-fault I/O inside cudaMemcpy.
causeway_test(test_diagnosis_live_until_stop LABEL bpf TIMEOUT 300
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_diagnosis_live_until_stop.cpp ${CMAKE_CURRENT_LIST_DIR}/diagnosis_live_support.cpp
          ${CMAKE_CURRENT_LIST_DIR}/collector_harness.cpp
  LIBS causeway_tracedb causeway_diagnosis)
add_dependencies(test_diagnosis_live_until_stop causeway causeway_testprogs)

# Same chains either way (issue 36): one --record-all trace, a copy folded by the kernel's rule
# into what the default mode stores (record_all_fold.*), explain/stats compared byte for byte
# (docs/COLLECTOR.md "Same answers either way"; the launch baselines come from the rollups,
# docs/DIAGNOSIS.md "Baselines of counted ops"). launch_bound's thread-time split and gpu_wait's
# own-submits figure are byte-identical too: a launch its thread was switched out in is a row
# (bpf/calls.bpf.h mark_switched_out; the fold reads it from the sched rows), every gap's off-CPU
# time is subtracted (diagnosis/thread_activity.cpp), and the submits are counted per thread
# since its previous GPU wait, which no run straddles.
causeway_test(test_record_all_same_chains LABEL bpf TIMEOUT 300
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_record_all_same_chains.cpp ${CMAKE_CURRENT_LIST_DIR}/record_all_fold.cpp
          ${CMAKE_CURRENT_LIST_DIR}/diagnosis_live_support.cpp ${CMAKE_CURRENT_LIST_DIR}/collector_harness.cpp
  LIBS causeway_tracedb causeway_diagnosis)
add_dependencies(test_record_all_same_chains causeway causeway_testprogs)
