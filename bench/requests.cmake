# Inference request tracing: what it costs a served request and an untraced process's syscalls.
# Run: sudo bench/request_cost.py --build build   (results: docs/BENCHMARKS.md)
add_executable(syscall_cost ${CMAKE_CURRENT_LIST_DIR}/syscall_cost.c)
set_target_properties(syscall_cost PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bench)
