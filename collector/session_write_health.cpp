// Session's watch on the writer: a failed write is said on stderr at once, its recovery once it
// holds, and the trace stops by itself when waiting cannot help (docs/COLLECTOR.md "Faults").
#include "collector/session_internal.h"

#include <chrono>
#include <iostream>

#include "common/units.h"

namespace causeway::collector {

// "30 s" rather than "30.00s" for the whole seconds a person sets.
std::string Session::stall_text(int64_t ns) {
  return ns % 1'000'000'000 == 0 ? std::to_string(ns / 1'000'000'000) + " s" : format_duration_ns(ns);
}

// A failed write must not go unnoticed until the user stops the trace: said on stderr the
// round it is seen (the writer tries every 100 ms), and again once writes have succeeded for
// 2 s — a disk that is nearly full takes a small batch now and then, which is no recovery
// worth a line each time. True when waiting cannot help: the DB is gone, or nothing was
// stored for stall_exit_ns.
bool Session::writer_cannot_go_on() {
  const WriteFault now_fault = writer_.fault();
  if (now_fault == WriteFault::none && reported_fault_ == WriteFault::none) return false;
  const WriterHealth h = writer_.health();
  const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::steady_clock::now().time_since_epoch()).count();
  if (h.fault == WriteFault::none) {
    if (clear_since_ns_ == 0) clear_since_ns_ = now;
    if (now - clear_since_ns_ < 2'000'000'000) return false;
    std::cerr << "causeway trace: writing " << o_.db << " again; " << writer_.counters().dropped_write_error
              << " events could not be stored meanwhile (counted per op in the session)" << std::endl;
    reported_fault_ = WriteFault::none;
    return false;
  }
  clear_since_ns_ = 0;
  if (h.fault != reported_fault_) {
    reported_fault_ = h.fault;
    if (!write_fault_may_clear(h.fault))
      std::cerr << "causeway trace: " << o_.db
                << (h.fault == WriteFault::db_deleted ? " was deleted or moved away" : " was replaced by another file")
                << " while tracing: nothing more can be stored in it; stopping" << std::endl;
    else
      std::cerr << "causeway trace: cannot write " << o_.db << ": "
                << (h.fault == WriteFault::disk_full ? "the disk is full: " : h.fault == WriteFault::io_error ? "I/O error: " : "")
                << h.error << "; events from now on are counted as lost, per op; the trace stops by itself after "
                << stall_text(o_.stall_exit_ns)
                << " with nothing stored: free space (or pass --max-db), or press Ctrl-C to stop now" << std::endl;
  }
  if (!write_fault_may_clear(h.fault)) {
    sum_.loss.stopped_by_itself = o_.db + (h.fault == WriteFault::db_deleted ? " was deleted or moved away" : " was replaced");
    return true;
  }
  // Stalled: failing, and no row stored since (a nearly full disk that takes a small batch
  // now and then is slow progress, not none).
  if (now - std::max(h.failing_since_ns, h.stored_at_ns) < o_.stall_exit_ns) return false;
  sum_.loss.stopped_by_itself = "nothing could be stored in " + o_.db + " for " + stall_text(o_.stall_exit_ns);
  std::cerr << "causeway trace: " << sum_.loss.stopped_by_itself << "; stopping" << std::endl;
  return true;
}

}  // namespace causeway::collector
