# Collector benchmarks (root): probe cost vs a bare uprobe in the same run, drops at a target
# rate, RSS. Run: sudo build/bench/probe_cost   (results: docs/bench-collector.md)
add_executable(probe_cost ${CMAKE_CURRENT_LIST_DIR}/probe_cost.cpp)
target_link_libraries(probe_cost PRIVATE causeway_collector causeway_bpf_bench_empty ${CMAKE_DL_LIBS})
set_target_properties(probe_cost PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bench)
add_dependencies(probe_cost cw_fake_cudart)

# What `causeway trace` as shipped costs a traced call, against an empty bpftrace probe and an
# untraced twin in the same run. Run: sudo build/bench/trace_cost   (results: docs/BENCHMARKS.md)
add_executable(trace_cost ${CMAKE_CURRENT_LIST_DIR}/trace_cost.cpp)
target_link_libraries(trace_cost PRIVATE causeway_tracedb PkgConfig::LIBBPF ${CMAKE_DL_LIBS})
set_target_properties(trace_cost PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bench)
add_dependencies(trace_cost causeway cw_fake_cudart)

# What causeway's scheduler hooks cost a run, untraced and traced, and a traced ping-pong's
# switch rate. Run: sudo build/bench/sched_hook_cost   (results: docs/BENCHMARKS.md)
add_executable(sched_hook_cost ${CMAKE_CURRENT_LIST_DIR}/sched_hook_cost.cpp)
target_link_libraries(sched_hook_cost PRIVATE causeway_tracedb PkgConfig::LIBBPF Threads::Threads)
set_target_properties(sched_hook_cost PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bench)
add_dependencies(sched_hook_cost causeway)
