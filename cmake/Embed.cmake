# causeway_embed(<target> <symbol> <file>): compiles <file>'s text into <target> as
# `extern const char* const <symbol>` (namespace causeway). Re-runs on change of the file.
function(causeway_embed target symbol file)
  get_filename_component(abs "${file}" ABSOLUTE)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${abs}")
  file(READ "${abs}" content)
  set(out "${CMAKE_CURRENT_BINARY_DIR}/embedded_${symbol}.cpp")
  file(WRITE "${out}.tmp"
    "// Generated from ${file} at configure time; do not edit.\n"
    "namespace causeway {\nextern const char* const ${symbol};\n"
    "const char* const ${symbol} = R\"CWEMBED(${content})CWEMBED\";\n}\n")
  file(COPY_FILE "${out}.tmp" "${out}" ONLY_IF_DIFFERENT)
  target_sources(${target} PRIVATE "${out}")
endfunction()
