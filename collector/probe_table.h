// Every function causeway probes: library, symbol, op id, and how its arguments are copied
// and decoded. The cookie built from a spec is what the generic BPF programs read.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace causeway::collector {

enum class LibKind : uint8_t { cudart, cuda, nccl };

struct ProbeSpec {
  LibKind lib;
  std::string_view symbol;
  uint16_t op;
  uint8_t dclass;         // enum cw_decode
  uint8_t aux = 0;        // kCopyKindMask bits: copy kind; kHasStream: the call takes a stream
  uint8_t nstack = 0;     // stack words copied at entry
  uint8_t struct_reg = 0; // register holding a pointer to a 40-byte config struct
  uint8_t comm_loc = 0;   // NCCL comm: 1..6 register, 7/8 first/second stack word
  uint8_t nccl_role = 0;  // enum cw_nccl_role
  bool out_ptr = false;   // read *(u64*)arg1 on success
};

inline constexpr uint8_t kCopyKindMask = 0x0f;
inline constexpr uint8_t kHasStream = 0x10;

std::span<const ProbeSpec> probe_specs();
uint64_t make_cookie(const ProbeSpec& spec);

// Which library a mapped file is, from its file name: libcudart.so*, libcuda.so*, libnccl.so*.
std::optional<LibKind> lib_kind_of(std::string_view file_name);
std::string_view lib_kind_name(LibKind kind);

}  // namespace causeway::collector
