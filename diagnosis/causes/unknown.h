// unknown: slow calls (outliers against the robust baseline) with no host or GPU cause in the trace.
// Always LOW: the evidence is weak.
#pragma once

#include <cstdint>
#include <map>

#include "diagnosis/causes/cause_module.h"

namespace causeway {

struct ChunkContext;  // diagnosis/chunk_context.h
struct Slow;
struct Ev;

struct Unknown {
  static constexpr Cause id = Cause::unknown;
  static constexpr std::string_view name = "unknown";
  struct Evidence {
    int64_t d_state_calls = 0;  // calls in D state with no block I/O, allocation burst or OOM to explain it
    int64_t off_cpu_ns = 0;
    int64_t no_context_calls = 0;  // ended after the host-context watermark: judged without all of their host context
    int64_t host_copy_calls = 0;   // synchronous copies that lost their time on-CPU (host work, not a GPU wait)
  };
  static Finding explain(const ChainView& v, const Evidence& e);
  static std::string fix(const ChainView& v, const Evidence& e);

  // A D-state call with no I/O or memory evidence.
  static void detect_d_state(ChunkContext& cx, const Slow& w);
  // An outlier no other detector claimed; context_complete false: its host context was not all
  // stored when it was judged (docs/DIAGNOSIS.md "The watermark rule"); host_copy: a synchronous
  // copy that lost its time on-CPU (docs/DIAGNOSIS.md "GPU evidence").
  static void detect(ChunkContext& cx, const Slow& w, bool context_complete = true, bool host_copy = false);
};

}  // namespace causeway
