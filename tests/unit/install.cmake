# `cmake --install` into a prefix inside the build tree gives a working bin/causeway plus the
# docs and examples; the example-configs e2e test runs that installed binary, as users do.
set(CAUSEWAY_TEST_PREFIX ${PROJECT_BINARY_DIR}/install-test)
add_test(NAME install_prefix
         COMMAND sh -c "rm -rf \"$1\" && cmake --install \"$2\" --prefix \"$1\" >/dev/null && \"$1/bin/causeway\" version && test -f \"$1/share/causeway/examples/README.md\" && test -f \"$1/share/causeway/docs/COLLECTOR.md\""
                 sh ${CAUSEWAY_TEST_PREFIX} ${PROJECT_BINARY_DIR})
set_tests_properties(install_prefix PROPERTIES LABELS unit TIMEOUT 120 FIXTURES_SETUP causeway_installed)

function(causeway_examples_use_installed prefix)
  if(TEST e2e_mcp_examples)
    get_test_property(e2e_mcp_examples ENVIRONMENT env)
    list(FILTER env EXCLUDE REGEX "^CAUSEWAY_BIN=")
    list(APPEND env "CAUSEWAY_BIN=${prefix}/bin/causeway")
    set_tests_properties(e2e_mcp_examples PROPERTIES ENVIRONMENT "${env}" FIXTURES_REQUIRED causeway_installed)
  endif()
endfunction()
# Deferred to the end of this folder, so the order the fragments are read in does not matter.
cmake_language(DEFER CALL causeway_examples_use_installed ${CAUSEWAY_TEST_PREFIX})
