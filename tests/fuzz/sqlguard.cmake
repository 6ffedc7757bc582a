# libFuzzer target for sqlguard's lexer + validator (CAUSEWAY_FUZZ=ON, clang). It compiles
# those sources itself, with coverage instrumentation, instead of linking causeway_sqlguard.
# Run it with tests/fuzz/run_fuzz.sh <seconds>.
if(CAUSEWAY_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "CAUSEWAY_FUZZ needs clang (libFuzzer): configure with -DCMAKE_CXX_COMPILER=clang++-14")
  endif()
  add_executable(sqlguard_fuzz ${CMAKE_CURRENT_LIST_DIR}/sqlguard_fuzz.cpp
    ${PROJECT_SOURCE_DIR}/sqlguard/lexer.cpp ${PROJECT_SOURCE_DIR}/sqlguard/validator.cpp
    ${PROJECT_SOURCE_DIR}/sqlguard/policy.cpp)
  target_compile_options(sqlguard_fuzz PRIVATE -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined)
  target_link_options(sqlguard_fuzz PRIVATE -fsanitize=fuzzer,address,undefined)
  set_target_properties(sqlguard_fuzz PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR})
endif()
