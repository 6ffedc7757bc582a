causeway_test(test_diagnosis LABEL unit
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_diagnosis_blocks.cpp ${CMAKE_CURRENT_LIST_DIR}/test_diagnosis_scenarios.cpp
          ${CMAKE_CURRENT_LIST_DIR}/test_diagnosis_arbitration.cpp ${CMAKE_CURRENT_LIST_DIR}/test_diagnosis_registry.cpp
          ${CMAKE_CURRENT_LIST_DIR}/test_diagnosis_tail.cpp ${CMAKE_CURRENT_LIST_DIR}/test_diagnosis_watermark.cpp
          ${CMAKE_CURRENT_LIST_DIR}/test_diagnosis_gpu_evidence.cpp ${CMAKE_CURRENT_LIST_DIR}/test_diagnosis_lock_wakers.cpp
          ${CMAKE_CURRENT_LIST_DIR}/test_diagnosis_ranks.cpp
          ${CMAKE_CURRENT_LIST_DIR}/test_rollup_baselines.cpp
  LIBS causeway_diagnosis causeway_synth)
causeway_test(test_rank_inference LABEL unit
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_rank_inference.cpp ${CMAKE_CURRENT_LIST_DIR}/test_collective_membership.cpp LIBS causeway_diagnosis)
causeway_test(test_chain_json LABEL unit
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_chain_json.cpp LIBS causeway_diagnosis)
