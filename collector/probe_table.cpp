#include "collector/probe_table.h"

#include <vector>

#include "bpf/events.h"
#include "tracedb/op_recording.h"

namespace causeway::collector {

std::optional<LibKind> lib_kind_of_source(uint8_t source) {
  switch (source) {
    case CW_SRC_CUDA: return LibKind::cudart;
    case CW_SRC_DRIVER: return LibKind::cuda;
    case CW_SRC_NCCL: return LibKind::nccl;
    default: return std::nullopt;
  }
}

uint64_t make_cookie(const OpInfo& op) {
  const ProbeInfo& p = op.probe;
  return uint64_t{op.id} | uint64_t{p.dclass} << 16 | uint64_t{p.aux} << 24 | uint64_t{p.nstack & 0xfu} << 32 |
         uint64_t{p.struct_reg & 0xfu} << 36 | uint64_t{p.comm_loc & 0xfu} << 40 | uint64_t{p.nccl_role & 0xfu} << 44 |
         uint64_t{p.out_reg & 0xfu} << 48 | uint64_t{op.source & 0xfu} << 52 |
         uint64_t{is_fast_counted_op(op.id) ? 1u : 0u} << 56;
}

std::span<const ProbeSpec> probe_specs() {
  static const std::vector<ProbeSpec> specs = [] {
    std::vector<ProbeSpec> v;
    for (const OpInfo& op : op_catalog()) {
      auto lib = lib_kind_of_source(op.source);
      if (!lib) continue;
      const uint64_t cookie = make_cookie(op);
      if (op.probe.symbols[0].empty()) v.push_back({*lib, op.name, &op, cookie});
      for (std::string_view sym : op.probe.symbols)
        if (!sym.empty()) v.push_back({*lib, sym, &op, cookie});
    }
    return v;
  }();
  return specs;
}

std::optional<LibKind> lib_kind_of(std::string_view name) {
  auto starts = [&](std::string_view p) { return name.size() >= p.size() && name.substr(0, p.size()) == p; };
  if (starts("libcudart.so")) return LibKind::cudart;
  if (starts("libcuda.so")) return LibKind::cuda;
  if (starts("libnccl.so")) return LibKind::nccl;
  return std::nullopt;
}

std::string_view lib_kind_name(LibKind kind) {
  switch (kind) {
    case LibKind::cudart: return "libcudart";
    case LibKind::cuda: return "libcuda";
    case LibKind::nccl: return "libnccl";
  }
  return "?";
}

}  // namespace causeway::collector
