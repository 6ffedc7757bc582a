// dataloader_starvation: between its CUDA calls the training thread sleeps until a data worker
// process (a DataLoader worker it forked, `pt_data_worker`) hands it a batch — directly or
// through a relay thread (the pin-memory thread). Culprit: the worker the thread waited for
// most, with what that worker did meanwhile (disk reads, CPU work, waiting for a CPU).
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "diagnosis/causes/cause_module.h"

namespace causeway {

struct ChunkContext;  // diagnosis/chunk_context.h
struct Slow;
struct WorkerWait;    // diagnosis/data_workers.h

struct DataLoaderStarvation {
  static constexpr Cause id = Cause::dataloader_starvation;
  static constexpr std::string_view name = "dataloader_starvation";

  // What the thread waited for one worker, and that worker's own time producing the batches
  // the thread waited for (from its previous delivery to the one that ended a wait).
  struct Worker {
    int64_t waits = 0, waited_ns = 0;
    bool seen = false;  // its own switch records cover the waits
    int64_t on_cpu_ns = 0, io_wait_ns = 0, runnable_ns = 0, sleep_ns = 0;
    int64_t io_requests = 0, io_bytes = 0;
    std::map<int64_t, int64_t> io_bytes_by_dev;    // block device (major << 20 | minor) -> bytes read
    std::map<uint32_t, int64_t> preempted_by_pid;  // who held its CPU while it was runnable
  };
  struct Evidence {
    std::map<uint32_t, Worker> workers;  // by worker pid
    // When each worker last handed the thread a batch: the worker's time since then is what
    // the batch it hands over next cost it.
    std::map<uint32_t, int64_t> last_delivery_ns;
    int64_t relayed_ns = 0;              // of the waits, ended through a relay thread
    uint32_t relay_tid = 0;
  };
  static Finding explain(const ChainView& v, const Evidence& e);
  static std::string fix(const ChainView& v, const Evidence& e);

  // Claims the host stall in a gap between calls whose sleep the workers ended (w.excess is
  // the worker-ended sleep that won the arbitration).
  static void detect(ChunkContext& cx, const Slow& w, const std::vector<WorkerWait>& waits);
};

}  // namespace causeway
