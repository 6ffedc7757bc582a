# libFuzzer target for an engine's /metrics answer: the HTTP/1.0 response reader and the
# Prometheus text parser (CAUSEWAY_FUZZ=ON, clang). Run it with tests/fuzz/run_fuzz.sh <seconds>.
if(CAUSEWAY_FUZZ)
  add_executable(enginemetrics_fuzz ${CMAKE_CURRENT_LIST_DIR}/enginemetrics_fuzz.cpp
    ${PROJECT_SOURCE_DIR}/collector/http_get.cpp ${PROJECT_SOURCE_DIR}/collector/endpoint.cpp
    ${PROJECT_SOURCE_DIR}/collector/netns.cpp ${PROJECT_SOURCE_DIR}/requests/prom_text.cpp)
  target_compile_options(enginemetrics_fuzz PRIVATE -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined)
  target_link_options(enginemetrics_fuzz PRIVATE -fsanitize=fuzzer,address,undefined)
  set_target_properties(enginemetrics_fuzz PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR})
endif()
