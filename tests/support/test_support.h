// Helpers for tests that exercise real files and real processes.
#pragma once

#include <string>
#include <vector>

namespace causeway::test {

// A fresh temporary folder, removed (recursively) on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

struct ProcessResult {
  int exit_code = -1;   // -1 when killed by a signal
  std::string out;      // stdout
  std::string err;      // stderr
};

// Runs argv (no shell) with optional extra environment ("K=V") and stdin text; waits.
ProcessResult run_process(const std::vector<std::string>& argv, const std::vector<std::string>& env = {},
                          const std::string& stdin_text = "", int timeout_s = 300);

// The causeway binary under test (CAUSEWAY_BIN from CTest), and source/build folders.
std::string causeway_bin();
std::string source_dir();
std::string build_dir();

// Runs causeway with args; shorthand for run_process({causeway_bin(), args...}).
ProcessResult run_causeway(const std::vector<std::string>& args, const std::vector<std::string>& env = {},
                           const std::string& stdin_text = "");

std::string read_file(const std::string& path);
bool file_exists(const std::string& path);

// Test executables may declare a need (e.g. root for bpf tests) by defining this function
// differently; the default (weak) has none. Returns "" when everything needed is here.
std::string missing_requirement();

}  // namespace causeway::test
