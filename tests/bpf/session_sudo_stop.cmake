# `sudo causeway trace` end to end: DB in the invoking user's home, owned by them, found by
# their readers; SIGINT stops in under 1 s with every call stored (root + BPF, else 77).
if(TARGET causeway_collector)
  add_test(NAME bpf_session_sudo_stop
           COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/session_sudo_stop.sh $<TARGET_FILE:causeway> $<TARGET_FILE:cw_workload>)
  set_tests_properties(bpf_session_sudo_stop PROPERTIES LABELS bpf SKIP_RETURN_CODE 77 TIMEOUT 300)
endif()
