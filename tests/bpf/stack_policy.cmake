# Which calls carry a user stack under `causeway trace` defaults (bpf/calls.bpf.h "User
# stacks"): slow calls, the first call of an op at each call site, not the fast rest. Root + BPF.
causeway_test(test_stack_policy_bpf LABEL bpf TIMEOUT 300
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_stack_policy_bpf.cpp ${CMAKE_CURRENT_LIST_DIR}/collector_harness.cpp
  LIBS causeway_tracedb)
add_dependencies(test_stack_policy_bpf causeway causeway_testprogs)
