# Request causes against a second, independently written vLLM-V1-shaped engine
# (tests/testprogs/tp_engine.py, tp_client.py): one ctest per planted incident, each a
# doctest case of one binary, so each stays under ~2 minutes on a busy 2-core host.
# Loop them: tests/bpf/loop_engine_live.sh.
add_executable(test_requests_engine_bpf ${CMAKE_CURRENT_LIST_DIR}/test_requests_engine_bpf.cpp
  ${CMAKE_CURRENT_LIST_DIR}/collector_harness.cpp)
target_link_libraries(test_requests_engine_bpf PRIVATE causeway_test_support causeway_tracedb)
add_dependencies(test_requests_engine_bpf causeway causeway_testprogs)
# cpu_hog runs in ~25-45 s on a quiet or moderately busy host (a real-time hog holding the
# engine's CPU half the time, a bounded client of 40 streams); under a unity build on both cores
# it took 3 min (the engine's half of CPU 0 shared with compilers), so every case gets 300 s.
foreach(scenario prefill late_rank late_cpu cpu_hog quiet)
  set(name test_requests_engine_${scenario}_bpf)
  add_test(NAME ${name} COMMAND test_requests_engine_bpf "--test-case=engine ${scenario}:*")
  set_tests_properties(${name} PROPERTIES LABELS bpf SKIP_RETURN_CODE 77 TIMEOUT 300
    ENVIRONMENT "CAUSEWAY_BIN=$<TARGET_FILE:causeway>;CAUSEWAY_SOURCE_DIR=${PROJECT_SOURCE_DIR};CAUSEWAY_BUILD_DIR=${PROJECT_BINARY_DIR}")
endforeach()
