# Collector unit tests: no privileges, no BPF (decoder, ELF symbols, maps, symbolization).
causeway_test(test_collector_decode LABEL unit SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_collector_decode.cpp
  LIBS causeway_collector_core)
causeway_test(test_collector_elf LABEL unit SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_collector_elf.cpp
  LIBS causeway_collector_core causeway_collector)
causeway_test(test_collector_proc LABEL unit SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_collector_proc.cpp
  LIBS causeway_collector_core)
causeway_test(test_collector_cgroups LABEL unit SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_collector_cgroups.cpp
  LIBS causeway_collector_core)
causeway_test(test_collector_stack_policy LABEL unit SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_collector_stack_policy.cpp
  LIBS causeway_collector_core)
causeway_test(test_python_runtime LABEL unit SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_python_runtime.cpp
  LIBS causeway_collector_core causeway_diagnosis)
causeway_test(test_collector_launcher_env LABEL unit SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_collector_launcher_env.cpp
  LIBS causeway_collector_core)
causeway_test(test_engine_scraper LABEL unit SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_engine_scraper.cpp
  LIBS causeway_collector_core causeway_collector)
causeway_test(test_collector_sock_hook LABEL unit SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_collector_sock_hook.cpp
  LIBS causeway_collector)
causeway_test(test_call_agg LABEL unit SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_call_agg.cpp
  LIBS causeway_collector_core)
causeway_test(test_collector_discovery_events LABEL unit SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_collector_discovery_events.cpp
  LIBS causeway_collector_core)
causeway_test(test_collector_ring_wait LABEL unit SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_collector_ring_wait.cpp
  LIBS causeway_collector)
