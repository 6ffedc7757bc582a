#include "diagnosis/request_evidence.h"

#include <algorithm>

#include "diagnosis/tracer_pid.h"
#include "tracedb/sqlite_handle.h"

namespace causeway::requests {

RequestEvidence::RequestEvidence(sqlite3* db, int64_t session_id, std::vector<RequestSpan> spans)
    : db_(db), session_id_(session_id), spans_(std::move(spans)) {
  // Long prompts: 4× the median, and at least 1 KiB (a uniform load has no long prefills).
  std::vector<uint64_t> bytes;
  for (const auto& s : spans_) bytes.push_back(s.prompt_bytes);
  if (!bytes.empty()) {
    std::nth_element(bytes.begin(), bytes.begin() + bytes.size() / 2, bytes.end());
    long_prompt_bytes_ = std::max<uint64_t>(1024, 4 * bytes[bytes.size() / 2]);
  }
  // Names of processes, and of threads seen in context switches (a culprit need not be traced).
  if (auto st = Statement::prepare(db_, "SELECT tid, comm FROM threads WHERE session_id = ?1 AND tid = pid")) {
    st->bind(1, session_id_);
    while (st->step() == SQLITE_ROW) comms_[static_cast<uint32_t>(st->col_int(0))] = st->col_text(1);
  }
  tracer_pid_ = read_tracer_pid(db_, session_id_);
  if (auto st = Statement::prepare(db_, "SELECT pid, comm FROM processes WHERE session_id = ?1 AND comm != ''")) {
    st->bind(1, session_id_);
    while (st->step() == SQLITE_ROW) comms_[static_cast<uint32_t>(st->col_int(0))] = st->col_text(1);
  }
}

std::string RequestEvidence::comm(uint32_t pid) const {
  auto c = comms_.find(pid);
  return c == comms_.end() ? "" : c->second;
}

// The server and all its recorded descendants, at any depth (vLLM: API server → engine core
// → workers; a launcher or a wrapper shell adds levels), by the parent pids of the
// session's processes rows. A link needs the middle process's own row: the collector records
// every descendant of a traced server, not only those that made traced calls.
const std::vector<uint32_t>& RequestEvidence::engine_pids(uint32_t server_pid) {
  auto it = engines_.find(server_pid);
  if (it != engines_.end()) return it->second;
  std::vector<uint32_t> pids{server_pid};
  auto st = Statement::prepare(db_,
                               "WITH RECURSIVE tree(pid) AS (SELECT ?2 UNION SELECT p.pid FROM processes p JOIN tree t "
                               "ON p.ppid = t.pid WHERE p.session_id = ?1 AND p.pid != ?2) SELECT pid FROM tree WHERE pid != ?2 "
                               "ORDER BY pid");
  if (st) {
    st->bind(1, session_id_);
    st->bind(2, int64_t{server_pid});
    while (st->step() == SQLITE_ROW) pids.push_back(static_cast<uint32_t>(st->col_int(0)));
  }
  return engines_[server_pid] = pids;
}

const EngineSeries* RequestEvidence::series(uint32_t server_pid) {
  if (!series_) series_ = load_engine_series(db_, session_id_);
  auto it = series_->find(server_pid);
  return it == series_->end() ? nullptr : &it->second;
}

}  // namespace causeway::requests
