// The functions causeway probes and the BPF cookie of each, derived from the op table
// (tracedb/op_catalog.h): an op of source cuda / driver / nccl is probed in libcudart /
// libcuda / libnccl under each of its symbols, with a cookie built from its probe fields.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "tracedb/op_catalog.h"

namespace causeway::collector {

enum class LibKind : uint8_t { cudart, cuda, nccl };

struct ProbeSpec {
  LibKind lib;
  std::string_view symbol;
  const OpInfo* op;
  uint64_t cookie;
};

std::span<const ProbeSpec> probe_specs();

// The cookie of an op's probes: its id, source and probe fields (layout in bpf/events.h).
uint64_t make_cookie(const OpInfo& op);

// The library an op of this source is probed in; nullopt for host sources (tracepoints).
std::optional<LibKind> lib_kind_of_source(uint8_t source);

// Which library a mapped file is, from its file name: libcudart.so*, libcuda.so*, libnccl.so*.
std::optional<LibKind> lib_kind_of(std::string_view file_name);
std::string_view lib_kind_name(LibKind kind);

}  // namespace causeway::collector
