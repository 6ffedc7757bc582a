// /proc/PID/maps: parsing, and where in a process a file-backed address comes from.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace causeway::collector {

struct Mapping {
  uint64_t start = 0;
  uint64_t end = 0;
  uint64_t offset = 0;  // file offset of start
  uint64_t inode = 0;
  uint32_t dev_major = 0;
  uint32_t dev_minor = 0;
  bool exec = false;
  std::string path;  // "" for anonymous; "[vdso]", "[heap]" … for special ones
};

// Parses the text of a maps file; malformed lines are skipped.
std::vector<Mapping> parse_maps(std::string_view text);
// Reads /proc/<pid>/maps; empty when the process is gone or unreadable.
std::vector<Mapping> read_maps(uint32_t pid);

// The mapping holding addr (maps are sorted by start).
const Mapping* find_mapping(const std::vector<Mapping>& maps, uint64_t addr);

// The final path component without " (deleted)": "libcudart.so.13".
std::string_view base_name(std::string_view path);

}  // namespace causeway::collector
