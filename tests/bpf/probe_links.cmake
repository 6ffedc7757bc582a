# Uprobes on and off in milliseconds (docs/COLLECTOR.md "Uprobe links"): the probe is in a job's
# text while `trace` runs and out of it once `trace` has exited; a second trace records a new
# job from its first call. Once per link kind: the kernel's best (session uprobes on 6.13+),
# multi-uprobe links, the per-probe fallback (root + BPF, else 77; a kind the kernel lacks falls
# back to the next, and the test says which kind ran).
if(TARGET causeway_collector)
  foreach(kind auto multi perf)
    set(name bpf_trace_probes_gone_${kind})
    if(kind STREQUAL "auto")
      set(name bpf_trace_probes_gone)
    endif()
    add_test(NAME ${name}
             COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/trace_probes_gone.sh $<TARGET_FILE:causeway> $<TARGET_FILE:cw_workload>)
    set_tests_properties(${name} PROPERTIES ENVIRONMENT CAUSEWAY_UPROBE_LINKS=${kind} LABELS bpf SKIP_RETURN_CODE 77
                         TIMEOUT 300)
  endforeach()
endif()
