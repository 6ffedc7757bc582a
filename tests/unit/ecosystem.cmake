# Ecosystem: import of ingero traces, Perfetto export, Prometheus metrics (issue #7). Each
# test exists only where its module is built (CAUSEWAY_SKIP may leave one out).
if(TARGET causeway_importers AND TARGET causeway_diagnosis AND TARGET causeway_synth)
  causeway_test(test_import_ingero_files LABEL unit
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_import_ingero_files.cpp
    LIBS causeway_importers causeway_diagnosis nlohmann_json::nlohmann_json)
  causeway_test(test_import_refuse LABEL unit
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_import_refuse.cpp
    LIBS causeway_importers causeway_synth nlohmann_json::nlohmann_json)
endif()
if(TARGET causeway_exporters AND TARGET causeway_synth)
  causeway_test(test_export_perfetto LABEL unit
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_export_perfetto.cpp
    LIBS causeway_exporters causeway_diagnosis causeway_requests causeway_synth nlohmann_json::nlohmann_json)
endif()
if(TARGET causeway_metrics)
  causeway_test(test_metrics_exposition LABEL unit
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_metrics_exposition.cpp
    LIBS causeway_metrics)
endif()
if(TARGET causeway_exporters AND TARGET causeway_synth)
  causeway_test(test_report LABEL unit
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_report.cpp
    LIBS causeway_exporters causeway_diagnosis causeway_requests causeway_synth nlohmann_json::nlohmann_json)
endif()
