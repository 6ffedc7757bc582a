// One ELF file's function symbols (.symtab, .dynsym and the LZMA-compressed .gnu_debugdata
// "MiniDebugInfo" where present), build id and load segments: what probe attach (symbol →
// file offset, first instruction bytes) and stack symbolization (address → name+off) need.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/result.h"

namespace causeway::collector {

struct ElfSymbol {
  uint64_t vaddr = 0;
  uint64_t size = 0;
  std::string name;
};

struct ElfSegment {
  uint64_t vaddr = 0;
  uint64_t offset = 0;
  uint64_t filesz = 0;
  bool exec = false;
};

class ElfFile {
 public:
  // Through OpenedLib (collector/lib_file.h): O_NONBLOCK, regular files only, with a deadline.
  static Result<std::shared_ptr<const ElfFile>> load(const std::string& path);
  // Parses a file already in memory; `path` names it in messages and for read_bytes().
  static Result<std::shared_ptr<const ElfFile>> from_image(const void* image, size_t size, const std::string& path);

  const std::string& path() const { return path_; }
  const std::string& build_id() const { return build_id_; }  // lowercase hex, "" when absent
  bool has_symtab() const { return has_symtab_; }
  bool has_debugdata() const { return has_debugdata_; }
  size_t symbol_count() const { return syms_.size(); }

  // A function symbol by exact (unversioned) name.
  std::optional<ElfSymbol> find(std::string_view name) const;
  std::optional<uint64_t> vaddr_to_offset(uint64_t vaddr) const;
  std::optional<uint64_t> offset_to_vaddr(uint64_t offset) const;
  // "name+0x1f" (demangled) for an address inside a function; nullopt when none covers it.
  std::optional<std::string> symbolize(uint64_t vaddr) const;
  // Up to n bytes of the file at offset (e.g. the first instructions of a function).
  std::vector<uint8_t> read_bytes(uint64_t offset, size_t n) const;

 private:
  ElfFile() = default;
  bool parse(const void* image, size_t size, bool from_debugdata, std::string& err);
  void finish();

  std::string path_;
  std::string build_id_;
  bool has_symtab_ = false;
  bool has_debugdata_ = false;
  std::vector<ElfSymbol> syms_;  // sorted by vaddr after finish()
  std::unordered_map<std::string, size_t> by_name_;
  std::vector<ElfSegment> segments_;
};

// Decompresses an .xz stream (MiniDebugInfo); empty on failure.
std::vector<uint8_t> xz_decompress(const uint8_t* data, size_t size);

}  // namespace causeway::collector
