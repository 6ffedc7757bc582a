# The gpu tier (docs/GPU.md): scripts/gpu-check.sh and the package it travels in.
#   package_portable  scripts/package.sh's folder runs version/demo/explain/check with this
#                     host's copies of its libraries hidden (root: a mount namespace, else 77)
#   gpu_check_fake    scripts/gpu-check.sh --fake: every planted incident named right, through
#                     the fake libcudart (root + BPF, else 77)
#   gpu_check         scripts/gpu-check.sh on a real GPU with PyTorch (label gpu; 77 without one)
if(TARGET causeway_collector)
  add_test(NAME package_portable COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/package_portable.sh ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR})
  add_test(NAME gpu_check_fake COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/gpu_check_test.sh --fake ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR})
  add_test(NAME gpu_check COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/gpu_check_test.sh --gpu ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR})
  set_tests_properties(package_portable PROPERTIES LABELS bpf SKIP_RETURN_CODE 77 TIMEOUT 300 RUN_SERIAL TRUE)
  set_tests_properties(gpu_check_fake PROPERTIES LABELS bpf SKIP_RETURN_CODE 77 TIMEOUT 600 RUN_SERIAL TRUE)
  set_tests_properties(gpu_check PROPERTIES LABELS gpu SKIP_RETURN_CODE 77 TIMEOUT 600 RUN_SERIAL TRUE)
endif()
