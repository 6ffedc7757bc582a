// cold_start: slow first calls of an op (of a kernel, for launches) within the start-up window of
// a process (context creation, module loading). At most MEDIUM: a one-time cost.
#pragma once

#include <cstdint>
#include <map>

#include "diagnosis/causes/cause_module.h"

namespace causeway {

struct ChunkContext;  // diagnosis/chunk_context.h
struct Slow;
struct Ev;

struct ColdStart {
  static constexpr Cause id = Cause::cold_start;
  static constexpr std::string_view name = "cold_start";
  struct Evidence {
    struct PerOp {
      int64_t calls = 0, excess_ns = 0;
    };
    std::map<uint16_t, PerOp> by_op;
  };
  static Finding explain(const ChainView& v, const Evidence& e);
  static std::string fix(const ChainView& v, const Evidence& e);

  static void detect(ChunkContext& cx, const Slow& w);
};

}  // namespace causeway
