// `causeway check`: is this host ready to trace? Each item PASS / WARN / FAIL with a remedy.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace causeway::collector {

struct CheckItem {
  std::string name;
  std::string status;  // PASS | WARN | FAIL
  std::string detail;
  std::string remedy;  // empty on PASS
};

std::vector<CheckItem> run_checks(const std::string& db_path);
bool checks_ready(const std::vector<CheckItem>& items);  // no FAIL
nlohmann::ordered_json checks_to_json(const std::vector<CheckItem>& items);  // name, status, detail, remedy

// Candidate library files outside running processes: the dynamic linker cache,
// $LD_LIBRARY_PATH, $CUDA_HOME/$CUDA_PATH and the conventional /usr/local/cuda.
std::vector<std::string> find_library_files();
// "13.0.96" from a resolved file name like libcudart.so.13.0.96; "" when unversioned.
std::string version_from_file_name(const std::string& path);

}  // namespace causeway::collector
