// CPython interpreters on the host for tests: system ones on PATH (pyenv shims excluded) and
// every pyenv version under $PYENV_ROOT (else `pyenv root`, else ~/.pyenv). No machine path.
#pragma once

#include <cstdlib>
#include <exception>
#include <filesystem>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/test_support.h"

namespace causeway::test {

struct CPython {
  std::string version;  // "3.12"
  std::string path;
};

inline std::string pyenv_root() {
  if (const char* r = std::getenv("PYENV_ROOT"); r && *r) return r;
  try {
    auto p = run_process({"pyenv", "root"});
    if (p.exit_code == 0 && !p.out.empty()) return p.out.substr(0, p.out.find('\n'));
  } catch (const std::exception&) {
    // no pyenv on PATH
  }
  if (const char* h = std::getenv("HOME")) return std::string(h) + "/.pyenv";
  return "";
}

// One entry per distinct binary of CPython 3.min..3.max.
inline std::vector<CPython> find_cpythons(int min_minor, int max_minor) {
  namespace fs = std::filesystem;
  std::vector<CPython> out;
  std::set<std::string> seen;
  auto add = [&](int minor, const fs::path& p) {
    std::error_code ec;
    if (minor < min_minor || minor > max_minor || !fs::exists(p, ec)) return;
    const std::string real = fs::canonical(p, ec).string();
    if (ec || !seen.insert(real).second) return;
    out.push_back({"3." + std::to_string(minor), p.string()});
  };
  std::stringstream path(std::getenv("PATH") ? std::getenv("PATH") : "");
  for (std::string dir; std::getline(path, dir, ':');) {
    if (dir.find("pyenv") != std::string::npos) continue;
    for (int m = min_minor; m <= max_minor; ++m) add(m, fs::path(dir) / ("python3." + std::to_string(m)));
  }
  const std::string root = pyenv_root();
  std::error_code ec;
  if (!root.empty() && fs::is_directory(root + "/versions", ec))
    for (const auto& e : fs::directory_iterator(root + "/versions", ec)) {
      static const std::regex re(R"(^3\.(\d+)\.\d+$)");
      std::smatch m;
      const std::string name = e.path().filename().string();
      if (std::regex_match(name, m, re)) add(std::stoi(m[1].str()), e.path() / "bin" / ("python3." + m[1].str()));
    }
  return out;
}

}  // namespace causeway::test
