// doctest's main, shared by every test executable.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include "tests/support/test_support.h"

int main(int argc, char** argv) {
  if (auto reason = causeway::test::missing_requirement(); !reason.empty()) {
    // CTest maps 77 to "Skipped"; the reason is in the test's output.
    std::printf("SKIPPED: %s\n", reason.c_str());
    return 77;
  }
  doctest::Context context;
  context.applyCommandLine(argc, argv);
  return context.run();
}
