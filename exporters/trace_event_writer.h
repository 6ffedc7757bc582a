// Streaming writer of the Chrome Trace Event JSON object format
// ({"traceEvents": [...], "displayTimeUnit": "ns", "otherData": {...}}): each event is
// written as it is produced, through a fixed buffer, so memory does not grow with the trace.
// Timestamps are Unix ns in, microseconds relative to an origin out: JSON numbers are
// doubles, and absolute Unix µs (~1.8e15) would lose sub-µs precision.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>

#include "common/result.h"

namespace causeway {

class TraceEventWriter {
 public:
  // Creates/truncates path ("-" = stdout). other_data is a JSON object text for "otherData".
  static Result<std::unique_ptr<TraceEventWriter>> open(const std::string& path, int64_t origin_ns,
                                                        const std::string& other_data_json);
  ~TraceEventWriter();
  TraceEventWriter(const TraceEventWriter&) = delete;
  TraceEventWriter& operator=(const TraceEventWriter&) = delete;

  // Metadata: process/thread names and sort order.
  void process_name(uint32_t pid, std::string_view name);
  void process_sort_index(uint32_t pid, int64_t index);
  void process_labels(uint32_t pid, std::string_view labels);
  void thread_name(uint32_t pid, uint32_t tid, std::string_view name);

  // Complete slice ("X"); args_json is a JSON object text or empty.
  void slice(uint32_t pid, uint32_t tid, int64_t ts_ns, int64_t dur_ns, std::string_view name, std::string_view cat,
             std::string_view args_json, std::string_view cname = {});
  // Thread-scoped instant ("i", s = "t").
  void instant(uint32_t pid, uint32_t tid, int64_t ts_ns, std::string_view name, std::string_view cat,
               std::string_view args_json, std::string_view cname = {});
  // Async slice ("b" … "e") for intervals that may overlap on one thread (block I/O).
  void async_slice(uint32_t pid, uint32_t tid, uint64_t id, int64_t ts_ns, int64_t dur_ns, std::string_view name,
                   std::string_view cat, std::string_view args_json);
  // Flow arrow from the slice enclosing (pid, tid, from_ns) to the one enclosing (pid, tid, to_ns).
  void flow(uint64_t id, std::string_view name, std::string_view cat, uint32_t from_pid, uint32_t from_tid,
            int64_t from_ns, uint32_t to_pid, uint32_t to_tid, int64_t to_ns);

  // Closes the JSON document and the file; the size written in bytes.
  Result<uint64_t> finish();
  uint64_t events() const { return events_; }

 private:
  TraceEventWriter(FILE* f, bool owned, int64_t origin_ns);
  void begin_event();
  void put(std::string_view s);
  void put_ts(const char* key, int64_t ns, bool relative);
  void put_str(std::string_view s);  // JSON string literal, untrusted text sanitized
  void put_tail(std::string_view name, std::string_view cat, std::string_view args_json, std::string_view cname);
  void flush();

  FILE* f_;
  bool owned_;
  int64_t origin_ns_;
  std::string buf_;
  uint64_t events_ = 0;
  uint64_t bytes_ = 0;
  bool failed_ = false;
  bool finished_ = false;
};

// Chrome color names for severities (cname): HIGH terrible, MEDIUM bad, LOW yellow.
std::string_view severity_color(std::string_view severity);

}  // namespace causeway
