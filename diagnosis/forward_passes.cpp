#include "diagnosis/forward_passes.h"

#include <algorithm>
#include <map>
#include <set>

#include "bpf/events.h"
#include "diagnosis/event_window.h"
#include "diagnosis/causes/request_cause_util.h"
#include "tracedb/event_row.h"
#include "tracedb/op_args.h"
#include "tracedb/op_catalog.h"
#include "tracedb/sqlite_handle.h"

namespace causeway::requests {
namespace {

constexpr int64_t kCopyDtoH = 2, kCopyDefault = 4;  // cudaMemcpyKind (tracedb/op_args.h CopyArgs)

bool is_graph_launch_op(uint16_t op) {
  const OpInfo* o = find_op(op);
  return o && o->family == OpFamily::graph;
}

// A call that waits for the thread's launched work: a synchronize, or a blocking copy that
// brings results back (device to host, or the default kind, which UVA resolves at run time).
// A blocking host-to-device copy of the next step's inputs is not the end of a pass.
bool ends_pass(const PassCall& c) {
  if (!is_gpu_wait_op(c.op)) return false;
  if (!is_sync_copy_op(c.op)) return true;
  const int64_t kind = copy_args(c).kind;
  return kind == kCopyDtoH || kind == kCopyDefault;
}

// A pass may start this long before the window and still have its first launch read.
constexpr int64_t kReadMarginNs = 5'000'000'000;

std::string pass_ops() {
  std::string in;
  for (const OpInfo& op : op_catalog())
    if (is_launch_op(op.id) || is_graph_launch_op(op.id) || is_gpu_wait_op(op.id))
      in += (in.empty() ? "" : ",") + std::to_string(op.id);
  // Launches counted in the kernel come as their thread's run (docs/COLLECTOR.md "Aggregated calls").
  return in + "," + std::to_string(CW_OP_CALLS_AGGREGATED);
}

}  // namespace

PassScan find_forward_passes(std::span<const PassCall> calls) {
  PassScan out;
  std::map<uint32_t, ForwardPass> open;  // tid -> the pass its launches opened
  std::set<uint32_t> launched, waited;   // threads that launched / closed a pass
  for (const PassCall& c : calls) {
    // A run of launches counted in the kernel: its calls, from its first one's start.
    const bool run = c.op == CW_OP_CALLS_AGGREGATED && is_launch_op(counted_run_args(c).last_op);
    if (run || is_launch_op(c.op) || is_graph_launch_op(c.op)) {
      auto [it, fresh] = open.try_emplace(c.tid);
      if (fresh) it->second = ForwardPass{c.pid, c.tid, c.ts_ns, c.ts_ns, 0, false};
      it->second.launches += run ? static_cast<uint32_t>(std::max<int64_t>(1, counted_run_args(c).calls)) : 1u;
      it->second.graph = it->second.graph || is_graph_launch_op(c.op);
      launched.insert(c.tid);
    } else if (ends_pass(c)) {
      auto it = open.find(c.tid);
      if (it == open.end()) continue;  // a wait with nothing launched since the last one
      it->second.end_ns = c.ts_ns + c.dur_ns;
      out.passes.push_back(it->second);
      open.erase(it);
      waited.insert(c.tid);
    }
  }
  for (uint32_t tid : launched)
    if (!waited.count(tid)) out.undelimited_tids.push_back(tid);
  std::sort(out.passes.begin(), out.passes.end(),
            [](const ForwardPass& a, const ForwardPass& b) { return a.start_ns < b.start_ns; });
  return out;
}

Result<PassScan> load_forward_passes(sqlite3* db, int64_t session_id, const std::vector<uint32_t>& pids, int64_t from_ns,
                                     int64_t to_ns) {
  if (pids.empty() || to_ns < from_ns) return PassScan{};
  // A pass whose first launch is in the window may end after it: read past its end too.
  auto ids = event_ids_for_window(db, session_id, from_ns, to_ns + kReadMarginNs);
  if (!ids) return ids.error();
  if (ids->empty()) return PassScan{};
  static constexpr EventColumns<11> kPassColumns{{EventCol::ts_ns, EventCol::dur_ns, EventCol::pid, EventCol::tid,
                                                  EventCol::op_id, EventCol::a0, EventCol::a1, EventCol::a2, EventCol::a3,
                                                  EventCol::a4, EventCol::a5}};
  auto st = Statement::prepare(db, "SELECT " + kPassColumns.sql() + " FROM events WHERE "
                                   "session_id = ?1 AND id BETWEEN ?2 AND ?3 AND ts_ns BETWEEN ?4 AND ?5 AND op_id IN (" +
                                   pass_ops() + ") AND pid IN (" + sql_id_list(pids) + ") ORDER BY ts_ns");
  if (!st) return st.error();
  st->bind(1, session_id);
  st->bind(2, ids->lo);
  st->bind(3, ids->hi);
  st->bind(4, from_ns);
  st->bind(5, to_ns + kReadMarginNs);
  std::vector<PassCall> calls;
  int rc;
  while ((rc = st->step()) == SQLITE_ROW) {
    const CallRecord e = decode_event(st->get(), kPassColumns).call;
    calls.push_back(PassCall{e.ts_ns, e.dur_ns, e.pid, e.tid, e.op, e.a});
  }
  if (rc != SQLITE_DONE) return make_error("sql", sqlite_error_text(db));
  PassScan scan = find_forward_passes(calls);
  std::erase_if(scan.passes, [&](const ForwardPass& p) { return p.start_ns > to_ns; });
  return scan;
}

int64_t median_pass_ns(const std::vector<ForwardPass>& passes) {
  if (passes.empty()) return 0;
  std::vector<int64_t> d;
  d.reserve(passes.size());
  for (const ForwardPass& p : passes) d.push_back(p.dur_ns());
  std::nth_element(d.begin(), d.begin() + static_cast<std::ptrdiff_t>(d.size() / 2), d.end());
  return d[d.size() / 2];
}

}  // namespace causeway::requests
