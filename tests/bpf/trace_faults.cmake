# `causeway trace` when it cannot store (docs/COLLECTOR.md "Faults"): a full tmpfs, a deleted or
# replaced DB, a second tracer on one DB, a traced process that exits (root + BPF, else 77).
if(TARGET causeway_collector)
  add_test(NAME bpf_trace_disk_full
           COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/trace_disk_full.sh $<TARGET_FILE:causeway> $<TARGET_FILE:cw_workload>)
  add_test(NAME bpf_trace_db_faults
           COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/trace_db_faults.sh $<TARGET_FILE:causeway> $<TARGET_FILE:cw_workload>)
  set_tests_properties(bpf_trace_disk_full bpf_trace_db_faults PROPERTIES LABELS bpf SKIP_RETURN_CODE 77 TIMEOUT 600)
endif()
