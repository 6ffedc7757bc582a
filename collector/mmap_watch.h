// Executable mappings made anywhere on the host, told by the kernel as they happen: how
// discovery learns that a process mapped a CUDA library (at exec, or dlopen()ed any time
// later) without reading every process's /proc/PID/maps every second
// (docs/COLLECTOR.md "Discovery and lifecycle").
//
// One perf software event per CPU (PERF_COUNT_SW_DUMMY: it counts nothing) with attr.mmap and
// mmap2 on and mmap_data off, so the kernel writes a PERF_RECORD_MMAP2 (pid, file name) into its ring
// for each mapping with PROT_EXEC that any process makes — what `perf record -a` uses to
// follow libraries. Nothing is sampled and nothing runs per syscall: the kernel's cost is one
// record per executable mapping (a library load), none for anonymous or data mappings. The
// rings are read without a syscall (their head is shared memory) from the drain loop.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "common/unique_fd.h"

namespace causeway::collector {

struct ExecMapping {
  uint32_t pid = 0;
  std::string path;  // as the kernel names the file in that process (d_path; " (deleted)" kept)
};

// One PERF_RECORD_MMAP2 record (header included, sample_id_all off): the mapping it tells;
// nullopt for any other record or a malformed one. Pure: tested on hand-made records.
std::optional<ExecMapping> decode_mmap2_record(const void* record, size_t size);

class MmapWatch {
 public:
  // Opens the event on every online CPU; an error (no perf events: perf_event_paranoid, a
  // seccomp filter, a kernel without them) says why, and discovery falls back to rescans.
  static Result<MmapWatch> open(size_t pages_per_cpu = 16);
  MmapWatch(MmapWatch&&) noexcept;
  MmapWatch& operator=(MmapWatch&&) noexcept;
  MmapWatch(const MmapWatch&) = delete;
  MmapWatch& operator=(const MmapWatch&) = delete;
  ~MmapWatch();

  // Each mapping written since the last call whose path `want` accepts, oldest first per CPU.
  std::vector<ExecMapping> take(const std::function<bool(std::string_view path)>& want);
  // Mappings read so far (all of them, wanted or not), and mappings the kernel dropped because
  // a ring was full (their processes are unknown: the caller rescans everything).
  uint64_t seen() const { return seen_; }
  uint64_t lost() const { return lost_; }
  size_t cpus() const { return rings_.size(); }

 private:
  struct Ring {
    UniqueFd fd;
    void* base = nullptr;  // the control page, then the data pages
    size_t map_bytes = 0;
  };
  MmapWatch() = default;
  void read_ring(Ring& r, const std::function<bool(std::string_view)>& want, std::vector<ExecMapping>& out);

  std::vector<Ring> rings_;
  std::vector<unsigned char> scratch_;  // a record that wraps around its ring's end, made whole
  uint64_t seen_ = 0, lost_ = 0;
};

}  // namespace causeway::collector
