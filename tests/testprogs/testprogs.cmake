# Test programs for the bpf tier (see cw_workload.cpp): fake libcudart.so.13, libcuda.so.1,
# libnccl.so.2 with the real entry-point names, and the workload that drives them. All land
# in <build>/testprogs so the workload finds the fakes next to itself.
set(CW_TESTPROGS_DIR ${PROJECT_BINARY_DIR}/testprogs)

function(causeway_fake_lib target name soversion source)
  add_library(${target} SHARED ${CMAKE_CURRENT_LIST_DIR}/${source})
  set_target_properties(${target} PROPERTIES OUTPUT_NAME ${name} SOVERSION ${soversion} C_VISIBILITY_PRESET hidden
    LIBRARY_OUTPUT_DIRECTORY ${CW_TESTPROGS_DIR})
  # Frame pointers so user stacks unwind; -O1 keeps each function a real call.
  target_compile_options(${target} PRIVATE -O1 -fno-omit-frame-pointer ${ARGN})
  target_link_libraries(${target} PRIVATE Threads::Threads rt)
endfunction()

# libcudart gets endbr64 at every entry (like distro builds) so the endbr64 skip is tested.
causeway_fake_lib(cw_fake_cudart cudart 13 fake_cudart.c -fcf-protection=full)
causeway_fake_lib(cw_fake_cuda cuda 1 fake_cuda.c)
causeway_fake_lib(cw_fake_nccl nccl 2 fake_nccl.c)

add_executable(cw_workload ${CMAKE_CURRENT_LIST_DIR}/cw_workload.cpp)
# -g whatever the build type: the bpf tests check file:line of its frames.
target_compile_options(cw_workload PRIVATE -fno-omit-frame-pointer -g)
target_link_libraries(cw_workload PRIVATE Threads::Threads ${CMAKE_DL_LIBS})
set_target_properties(cw_workload PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CW_TESTPROGS_DIR})
# One TCP connection over loopback (network bpf tests: retransmits attributed to the sender).
add_executable(cw_tcp ${CMAKE_CURRENT_LIST_DIR}/cw_tcp.cpp)
set_target_properties(cw_tcp PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CW_TESTPROGS_DIR})
# A statically linked HTTP server: request tracing's tracepoint fallback (no libc to probe).
add_executable(cw_static_http ${CMAKE_CURRENT_LIST_DIR}/cw_static_http.c)
target_link_options(cw_static_http PRIVATE -static)
set_target_properties(cw_static_http PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CW_TESTPROGS_DIR})
# A real C++ HTTP library's server (cpp-httplib: a thread pool, blocking accept and reads).
# Debian's is a compiled library whose pkg-config Cflags carry its CPPHTTPLIB_* settings.
pkg_check_modules(TESTPROG_HTTPLIB REQUIRED IMPORTED_TARGET cpp-httplib>=0.11)
add_executable(cw_httplib_server ${CMAKE_CURRENT_LIST_DIR}/cw_httplib_server.cpp)
target_link_libraries(cw_httplib_server PRIVATE PkgConfig::TESTPROG_HTTPLIB Threads::Threads)
set_target_properties(cw_httplib_server PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CW_TESTPROGS_DIR})
add_custom_target(causeway_testprogs DEPENDS cw_workload cw_tcp cw_static_http cw_httplib_server cw_fake_cudart cw_fake_cuda cw_fake_nccl)
