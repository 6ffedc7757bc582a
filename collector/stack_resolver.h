// Resolves located stacks to text on its own thread and hands each to the writer as a
// StackRecord, so loading a large library's symbols (tens of ms for libnccl, more for an
// unstripped libtorch) never stalls the ring drain. The drain keeps the cheap, time-critical
// half: locating addresses in the maps while the process is alive (Symbolizer::locate).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "collector/symbolizer.h"
#include "tracedb/store_writer.h"

namespace causeway::collector {

class StackResolver {
 public:
  // Uses only the resolve() half of `symbolizer`; the caller keeps locating on its thread.
  StackResolver(Symbolizer& symbolizer, StoreWriter& writer);
  ~StackResolver();
  StackResolver(const StackResolver&) = delete;
  StackResolver& operator=(const StackResolver&) = delete;

  // Queues one stack (its id and located frames) for resolution.
  void submit(uint64_t hash, std::vector<FrameLoc> frames);
  // Resolves everything submitted so far, pushes it to the writer, and stops the thread.
  void finish();

 private:
  void run();

  Symbolizer& symbolizer_;
  StoreWriter& writer_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::pair<uint64_t, std::vector<FrameLoc>>> jobs_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace causeway::collector
