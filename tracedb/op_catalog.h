// The fixed part of the `ops` dictionary: every op the BPF side can emit (ids from
// bpf/events.h) with its source, kind and the meaning of the generic args a0..a5.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace causeway {

struct OpInfo {
  uint16_t id;
  uint8_t source;          // enum cw_source
  std::string_view name;
  bool is_call;            // has a duration (else a point event)
  std::string_view arg_names;
};

const std::vector<OpInfo>& op_catalog();
const OpInfo* find_op(uint16_t id);
const OpInfo* find_op(std::string_view name);

// "cuda", "driver", "nccl", "host", "io", "net", "mem"; "unknown" otherwise.
std::string_view source_name(uint8_t source);
std::optional<uint8_t> source_from_name(std::string_view name);

}  // namespace causeway
