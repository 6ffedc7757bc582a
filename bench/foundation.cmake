add_executable(bench_ingest ${CMAKE_CURRENT_LIST_DIR}/ingest_bench.cpp)
target_link_libraries(bench_ingest PRIVATE causeway_tracedb)
add_executable(bench_stats ${CMAKE_CURRENT_LIST_DIR}/stats_bench.cpp)
target_link_libraries(bench_stats PRIVATE causeway_diagnosis causeway_synth)
