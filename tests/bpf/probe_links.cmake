# Uprobes on and off in milliseconds (docs/COLLECTOR.md "Uprobe links"): the probe is in a job's
# text while `trace` runs and out of it once `trace` has exited; a second trace records a new
# job from its first call. Once with the kernel's multi-uprobe links, once with the per-probe
# fallback (root + BPF, else 77).
if(TARGET causeway_collector)
  add_test(NAME bpf_trace_probes_gone
           COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/trace_probes_gone.sh $<TARGET_FILE:causeway> $<TARGET_FILE:cw_workload>)
  add_test(NAME bpf_trace_probes_gone_perf
           COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/trace_probes_gone.sh $<TARGET_FILE:causeway> $<TARGET_FILE:cw_workload>)
  set_tests_properties(bpf_trace_probes_gone_perf PROPERTIES ENVIRONMENT CAUSEWAY_UPROBE_LINKS=perf)
  set_tests_properties(bpf_trace_probes_gone bpf_trace_probes_gone_perf PROPERTIES LABELS bpf SKIP_RETURN_CODE 77
                       TIMEOUT 300)
endif()
