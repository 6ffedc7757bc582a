// Synthetic, deterministic demo sessions: realistic CUDA/NCCL call streams together with
// the sched, I/O and memory events that explain them, written through the same store
// writer as live traces. Each scenario has a known answer the diagnosis tests assert.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"

namespace causeway {

struct ScenarioInfo {
  std::string name;
  std::string description;     // one line
  std::string expected_cause;  // the chain cause the correlator should find ("" = none HIGH)
  std::string expected_culprit;  // comm of the culprit, when one is named
  uint32_t expected_culprit_pid = 0;
  // The request cause the tail of `causeway requests` should name first ("" = none; the
  // scenario serves no requests, or nothing is wrong with them). docs/INFERENCE.md.
  std::string expected_request_cause = "";
};

const std::vector<ScenarioInfo>& demo_scenarios();

struct DemoOptions {
  std::string scenario = "incident";
  uint64_t seed = 1;
  uint64_t events = 0;        // 0 = the scenario's natural size; else scale to about N call events
  int64_t start_ns = 0;       // 0 = now minus the scenario's length (the data ends "now")
};

struct DemoSummary {
  int64_t session_id = 0;
  uint64_t events_written = 0;   // call + host events
  uint64_t sched_written = 0;    // switches + wakeups
  uint64_t dropped = 0;
  size_t chains = 0;              // causal chains the correlator stored
  bool interrupted = false;      // SIGINT/SIGTERM stopped it early (everything accepted was flushed)
};

// Writes a new demo session into db_path (creating/migrating it). `stop` (may be null) is
// polled so an interrupted demo still flushes what it generated.
Result<DemoSummary> run_demo(const std::string& db_path, const DemoOptions& options, bool (*stop)() = nullptr);

}  // namespace causeway
