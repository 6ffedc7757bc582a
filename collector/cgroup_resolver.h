// Turns the cgroup v2 ids the BPF side reports into paths, containers and pods, once per id
// per session, on its own thread, and hands each to the writer as a CgroupRecord.
//
// An id is the inode number of the cgroup's folder in the cgroup2 mount, so a scan of the
// tree (one getdents per folder: the directory entries carry the inode) maps every id there
// to its path. The folder usually outlives its tasks by seconds (a container runtime removes
// it after the last task exits), so a culprit that ran for 10 ms and was gone before /proc
// could be read is still found. A scan happens only for an id not in the last one, at most
// once per `min_rescan`; an id a scan made after it was seen does not find is gone, and is
// stored with an empty path — ids are never reused while the host runs, so never a wrong one.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "tracedb/store_writer.h"

namespace causeway::collector {

// Every folder below `mount` (the cgroup2 mount) by inode: its path relative to the mount,
// "/" for the mount itself. Empty when `mount` cannot be read.
std::unordered_map<uint64_t, std::string> scan_cgroup_tree(const std::string& mount);

class CgroupResolver {
 public:
  // mount: the cgroup2 mount (collector/cgroup_paths.h); nullopt on a host without one, where
  // every id is stored with an empty path.
  CgroupResolver(std::optional<std::string> mount, StoreWriter& writer,
                 std::chrono::milliseconds min_rescan = std::chrono::seconds(1));
  ~CgroupResolver();
  CgroupResolver(const CgroupResolver&) = delete;
  CgroupResolver& operator=(const CgroupResolver&) = delete;

  // Drain thread only: queues an id the first time it is seen (one set lookup after that).
  void note(uint64_t id);
  // Resolves every id noted so far (with a last scan if some are unknown), pushes them to the
  // writer, and stops the thread.
  void finish();

  uint64_t resolved() const { return resolved_.load(std::memory_order_relaxed); }
  uint64_t unresolved() const { return unresolved_.load(std::memory_order_relaxed); }

 private:
  void run();
  // Ids not in the last scan wait here for the next one (at most one per min_rescan_).
  void resolve_misses(std::vector<uint64_t> misses);
  std::vector<uint64_t> take_queued();
  void emit(uint64_t id, const std::string* path);

  const std::optional<std::string> mount_;
  StoreWriter& writer_;
  const std::chrono::milliseconds min_rescan_;
  std::unordered_set<uint64_t> noted_;  // drain thread

  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<uint64_t> queue_;
  bool stop_ = false;

  // Resolver thread.
  std::unordered_map<uint64_t, std::string> tree_;  // the last scan
  std::chrono::steady_clock::time_point last_scan_{};
  std::atomic<uint64_t> resolved_{0}, unresolved_{0};
  std::thread thread_;
};

}  // namespace causeway::collector
