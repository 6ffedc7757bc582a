# The `security` tier (docs/SECURITY.md): hostile users, files and clients. Root's file work
# under sudo, library opens a user can stall, stale reads. Each needs root (it plays root
# under sudo or a root tracer against a real unprivileged user) and skips (77) without it.
add_test(NAME security_sudo_db_links
         COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/sudo_db_links.sh $<TARGET_FILE:causeway>)
set_tests_properties(security_sudo_db_links PROPERTIES LABELS security SKIP_RETURN_CODE 77 TIMEOUT 300 RUN_SERIAL TRUE)

add_test(NAME security_sudo_inputs
         COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/sudo_inputs.sh $<TARGET_FILE:causeway>)
set_tests_properties(security_sudo_inputs PROPERTIES LABELS security SKIP_RETURN_CODE 77 TIMEOUT 120 RUN_SERIAL TRUE)

add_test(NAME security_stale_read
         COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/stale_read.sh $<TARGET_FILE:causeway>)
set_tests_properties(security_stale_read PROPERTIES LABELS security SKIP_RETURN_CODE 77 TIMEOUT 120)

if(TARGET causeway_collector)
  add_test(NAME security_lib_fifo
           COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/lib_fifo.sh $<TARGET_FILE:causeway> $<TARGET_FILE:cw_fake_cudart>)
  set_tests_properties(security_lib_fifo PROPERTIES LABELS "security;bpf" SKIP_RETURN_CODE 77 TIMEOUT 180)
endif()
