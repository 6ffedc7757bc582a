# Correlator throughput and explain's read path over a (large) trace DB:
#   causeway demo quiet --events 10000000 --db /tmp/big.db && causeway_bench_diagnosis --db /tmp/big.db --store
add_executable(causeway_bench_diagnosis ${CMAKE_CURRENT_SOURCE_DIR}/diagnosis_bench.cpp)
target_link_libraries(causeway_bench_diagnosis PRIVATE causeway_diagnosis)
set_target_properties(causeway_bench_diagnosis PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR})
