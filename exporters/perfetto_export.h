// `causeway export --format perfetto`: a session as Chrome Trace Event JSON for
// ui.perfetto.dev / chrome://tracing. One process track per process, one thread track per
// thread; calls are slices with their decoded args; a traced thread's off-CPU intervals are
// slices on its track naming who ran; block I/O is async slices; chains are a slice plus
// instants on their own track with a flow arrow from the culprit; NCCL collectives carry
// (comm, seq, rank) and flow arrows from the first rank to enter to each later one, with
// process tracks ordered by rank. docs/EXPORT.md maps every element.
//
// Streams: events and sched rows are read in id / ts order and written at once; what is
// held is per-thread state (open off-CPU intervals, names) and collectives still missing
// ranks.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/result.h"

namespace causeway {

struct ExportOptions {
  std::string db_path;
  std::string out_path;                // "-" = stdout
  std::optional<int64_t> since_ns;     // only the last D of the session's data
  std::optional<uint32_t> pid;         // only this process (and its chains' culprits)
  std::optional<int64_t> session_id;   // default: the latest
};

struct ExportSummary {
  int64_t session_id = 0;
  uint64_t processes = 0, threads = 0;
  uint64_t call_slices = 0;      // calls (cuda, driver, nccl, net, …) as X slices
  uint64_t off_cpu_slices = 0;   // from sched rows, plus imported off-CPU host events
  uint64_t async_slices = 0;     // block I/O
  uint64_t instants = 0;         // point host events
  uint64_t chains = 0;
  uint64_t flows = 0;            // chain + collective arrows
  uint64_t collectives = 0;      // distinct (comm, seq)
  uint64_t trace_events = 0;     // JSON events written, metadata included
  uint64_t bytes = 0;
  double seconds = 0;
};

Result<ExportSummary> export_perfetto(const ExportOptions& options);

}  // namespace causeway
