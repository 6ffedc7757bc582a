// memory_pressure: D state with no block I/O, during page-allocation bursts or near an OOM kill.
// Culprit: the process that allocated most pages (and whether the OOM killer ended it).
#pragma once

#include <cstdint>
#include <map>

#include "diagnosis/causes/cause_module.h"

namespace causeway {

struct ChunkContext;  // diagnosis/chunk_context.h
struct Slow;
struct Ev;

struct MemoryPressure {
  static constexpr Cause id = Cause::memory_pressure;
  static constexpr std::string_view name = "memory_pressure";
  struct Evidence {
    int64_t pages_total = 0;                  // pages allocated by anyone during the stalls
    std::map<uint32_t, int64_t> oom_kill_ns;  // pid ended by the OOM killer -> when
  };
  static Finding explain(const ChainView& v, const Evidence& e);
  static std::string fix(const ChainView& v, const Evidence& e);

  // Claims a D-state call with no block I/O when page-allocation bursts overlap it or an OOM
  // kill is within 10 s; false otherwise.
  static bool detect(ChunkContext& cx, const Slow& w);
  static constexpr double kBurstPagesPer100ms = 25'000;  // ≈ 1 GiB/s of 4 KiB pages
};

}  // namespace causeway
