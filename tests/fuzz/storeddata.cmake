# libFuzzer target for the decoders of stored data (histogram blobs, stored JSON, stack frames;
# CAUSEWAY_FUZZ=ON, clang). Like sqlguard_fuzz it compiles the few sources it covers itself.
# Run it with tests/fuzz/run_storeddata_fuzz.sh <seconds>.
if(CAUSEWAY_FUZZ)
  add_executable(storeddata_fuzz ${CMAKE_CURRENT_LIST_DIR}/storeddata_fuzz.cpp
    ${PROJECT_SOURCE_DIR}/tracedb/histogram.cpp ${PROJECT_SOURCE_DIR}/common/untrusted_json.cpp
    ${PROJECT_SOURCE_DIR}/common/sanitize.cpp ${PROJECT_SOURCE_DIR}/diagnosis/frames.cpp)
  target_link_libraries(storeddata_fuzz PRIVATE nlohmann_json::nlohmann_json)
  target_compile_options(storeddata_fuzz PRIVATE -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined)
  target_link_options(storeddata_fuzz PRIVATE -fsanitize=fuzzer,address,undefined)
  set_target_properties(storeddata_fuzz PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR})
endif()
