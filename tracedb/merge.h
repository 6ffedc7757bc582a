// `causeway merge`: several hosts' trace DBs into one (docs/FLEET.md). Each input's latest
// session becomes one host of a new merged session: its pids, tids and CPUs are shifted by
// host_index * kMergedPidStride / kMergedCpuStride (pids repeat across hosts), stacks and
// event ids are renumbered, and a merged_hosts row keeps its identity (hostname, boot id,
// clock offset, system document, source file and sha256). Timestamps are CLOCK_REALTIME on
// every host already; they are kept, and the assumed skew is reported. Inputs are attached
// read-only and never written; the output is built in OUT.tmp and renamed when complete.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"

namespace causeway {

// Pids of host k (1-based) in a merged session are k * kMergedPidStride + its own pid, CPUs
// k * kMergedCpuStride + its own CPU: above any pid_max (2^22) and any CPU count.
constexpr int64_t kMergedPidStride = 10'000'000;
constexpr int64_t kMergedCpuStride = 10'000;
// cgroup v2 ids (inode numbers of each host's cgroup tree) of host k are k * 2^40 + its own: a
// host's cgroup inodes stay far below 2^40 (a trillion cgroups).
constexpr int64_t kMergedCgroupStride = int64_t{1} << 40;

struct MergeInputSummary {
  std::string path;
  std::string sha256;
  std::string host;
  int64_t source_session_id = 0;
  int schema_version = 0;
  int64_t events = 0;
  int64_t started_ns = 0, last_ns = 0;
  int64_t clock_offset_ns = 0;  // realtime - monotonic at its start (0: not recorded)
  int64_t pid_base = 0;
};

struct MergeSummary {
  int64_t session_id = 0;
  std::vector<MergeInputSummary> inputs;
  int64_t events = 0;
  std::vector<std::string> notes;  // clock assumptions, migrated schemas
};

// Fails with "merge_usage" (same file twice, output exists or is an input), "db_missing",
// "db_too_new", "merge_duplicate" (the same session in two inputs) or "db_write".
Result<MergeSummary> merge_trace_dbs(const std::string& out_path, const std::vector<std::string>& inputs);

}  // namespace causeway
