#include "exporters/trace_event_writer.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "common/user_output.h"

namespace causeway {

namespace {
constexpr size_t kFlushBytes = 1 << 20;  // 1 MiB: few syscalls, bounded memory
}

std::string_view severity_color(std::string_view severity) {
  if (severity == "HIGH") return "terrible";
  if (severity == "MEDIUM") return "bad";
  return "yellow";
}

Result<std::unique_ptr<TraceEventWriter>> TraceEventWriter::open(const std::string& path, int64_t origin_ns,
                                                                 const std::string& other_data_json) {
  FILE* f = stdout;
  if (path != "-") {
    auto fd = open_user_output(path, OutputOpen::truncate, 0644);
    if (!fd) return fd.error();
    f = ::fdopen(*fd, "wb");
    if (!f) {
      ::close(*fd);
      return make_error("export_open", "cannot write " + path + ": " + std::strerror(errno));
    }
  }
  std::unique_ptr<TraceEventWriter> w(new TraceEventWriter(f, path != "-", origin_ns));
  w->put("{\"displayTimeUnit\":\"ns\",\"otherData\":");
  w->put(other_data_json.empty() ? "{}" : other_data_json);
  w->put(",\"traceEvents\":[\n");
  return w;
}

TraceEventWriter::TraceEventWriter(FILE* f, bool owned, int64_t origin_ns) : f_(f), owned_(owned), origin_ns_(origin_ns) {
  buf_.reserve(kFlushBytes + 4096);
}

TraceEventWriter::~TraceEventWriter() {
  if (!finished_) (void)finish();
}

// The fields every slice and instant event ends with, then the closing brace.
void TraceEventWriter::put_tail(std::string_view name, std::string_view cat, std::string_view args_json,
                                std::string_view cname) {
  put(",\"name\":");
  put_str(name);
  put(",\"cat\":");
  put_str(cat);
  if (!cname.empty()) {
    put(",\"cname\":");
    put_str(cname);
  }
  if (!args_json.empty()) {
    put(",\"args\":");
    put(args_json);
  }
  put("}");
}

void TraceEventWriter::put(std::string_view s) {
  buf_.append(s);
  if (buf_.size() >= kFlushBytes) flush();
}

void TraceEventWriter::flush() {
  if (buf_.empty()) return;
  if (!failed_ && std::fwrite(buf_.data(), 1, buf_.size(), f_) != buf_.size()) failed_ = true;
  bytes_ += buf_.size();
  buf_.clear();
}

void TraceEventWriter::begin_event() {
  if (events_++) put(",\n");
}

void TraceEventWriter::put_ts(const char* key, int64_t ns, bool relative) {
  // µs with 3 decimals = exact ns; written from integers so no float rounding happens.
  int64_t v = relative ? ns - origin_ns_ : ns;
  char b[64];
  const char* sign = v < 0 ? "-" : "";
  uint64_t a = v < 0 ? static_cast<uint64_t>(-(v + 1)) + 1 : static_cast<uint64_t>(v);
  std::snprintf(b, sizeof b, ",\"%s\":%s%llu.%03llu", key, sign, static_cast<unsigned long long>(a / 1000),
                static_cast<unsigned long long>(a % 1000));
  put(b);
}

void TraceEventWriter::put_str(std::string_view s) {
  put(nlohmann::json(std::string(s)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

void TraceEventWriter::process_name(uint32_t pid, std::string_view name) {
  begin_event();
  put("{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":" + std::to_string(pid) + ",\"tid\":0,\"args\":{\"name\":");
  put_str(name);
  put("}}");
}

void TraceEventWriter::process_sort_index(uint32_t pid, int64_t index) {
  begin_event();
  put("{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":" + std::to_string(pid) +
      ",\"tid\":0,\"args\":{\"sort_index\":" + std::to_string(index) + "}}");
}

void TraceEventWriter::process_labels(uint32_t pid, std::string_view labels) {
  begin_event();
  put("{\"ph\":\"M\",\"name\":\"process_labels\",\"pid\":" + std::to_string(pid) + ",\"tid\":0,\"args\":{\"labels\":");
  put_str(labels);
  put("}}");
}

void TraceEventWriter::thread_name(uint32_t pid, uint32_t tid, std::string_view name) {
  begin_event();
  put("{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":" + std::to_string(pid) + ",\"tid\":" + std::to_string(tid) +
      ",\"args\":{\"name\":");
  put_str(name);
  put("}}");
}

void TraceEventWriter::slice(uint32_t pid, uint32_t tid, int64_t ts_ns, int64_t dur_ns, std::string_view name,
                             std::string_view cat, std::string_view args_json, std::string_view cname) {
  begin_event();
  put("{\"ph\":\"X\",\"pid\":" + std::to_string(pid) + ",\"tid\":" + std::to_string(tid));
  put_ts("ts", ts_ns, true);
  put_ts("dur", dur_ns < 0 ? 0 : dur_ns, false);
  put_tail(name, cat, args_json, cname);
}

void TraceEventWriter::instant(uint32_t pid, uint32_t tid, int64_t ts_ns, std::string_view name, std::string_view cat,
                               std::string_view args_json, std::string_view cname) {
  begin_event();
  put("{\"ph\":\"i\",\"s\":\"t\",\"pid\":" + std::to_string(pid) + ",\"tid\":" + std::to_string(tid));
  put_ts("ts", ts_ns, true);
  put_tail(name, cat, args_json, cname);
}

void TraceEventWriter::async_slice(uint32_t pid, uint32_t tid, uint64_t id, int64_t ts_ns, int64_t dur_ns,
                                   std::string_view name, std::string_view cat, std::string_view args_json) {
  for (int end = 0; end < 2; ++end) {
    begin_event();
    put(std::string("{\"ph\":\"") + (end ? "e" : "b") + "\",\"pid\":" + std::to_string(pid) + ",\"tid\":" +
        std::to_string(tid) + ",\"id\":" + std::to_string(id));
    put_ts("ts", end ? ts_ns + std::max<int64_t>(0, dur_ns) : ts_ns, true);
    put(",\"name\":");
    put_str(name);
    put(",\"cat\":");
    put_str(cat);
    if (!end && !args_json.empty()) {
      put(",\"args\":");
      put(args_json);
    }
    put("}");
  }
}

void TraceEventWriter::flow(uint64_t id, std::string_view name, std::string_view cat, uint32_t from_pid,
                            uint32_t from_tid, int64_t from_ns, uint32_t to_pid, uint32_t to_tid, int64_t to_ns) {
  for (int end = 0; end < 2; ++end) {
    begin_event();
    // "f" with bp "e" binds to the slice enclosing its timestamp (not the next one to start).
    put(std::string("{\"ph\":\"") + (end ? "f\",\"bp\":\"e" : "s") + "\",\"id\":" + std::to_string(id) +
        ",\"pid\":" + std::to_string(end ? to_pid : from_pid) + ",\"tid\":" + std::to_string(end ? to_tid : from_tid));
    put_ts("ts", end ? to_ns : from_ns, true);
    put(",\"name\":");
    put_str(name);
    put(",\"cat\":");
    put_str(cat);
    put("}");
  }
}

Result<uint64_t> TraceEventWriter::finish() {
  if (finished_) return bytes_;
  finished_ = true;
  put("\n]}\n");
  flush();
  if (std::fflush(f_) != 0) failed_ = true;
  if (owned_ && std::fclose(f_) != 0) failed_ = true;
  if (failed_) return make_error("export_write", "writing the trace file failed (disk full?)");
  return bytes_;
}

}  // namespace causeway
