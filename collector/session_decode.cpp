// Session's decode: each ring record to its writer record (collector/decode.h), on the Unix
// clock, with its process and thread named; and the kernel's counts of fast calls.
#include "collector/session_internal.h"

#include <algorithm>
#include <climits>

#include "collector/clock.h"
#include "collector/decode.h"
#include "collector/proc_info.h"
#include "collector/sock_decode.h"
#include "common/sanitize.h"
#include "metrics/registry.h"
#include "tracedb/histogram.h"
#include "tracedb/op_catalog.h"

namespace causeway::collector {

void Session::handle(const void* data, size_t size) {
  auto kind = record_kind(data, size);
  if (!kind) return;
  switch (*kind) {
    case CW_REC_CALL:
      if (size >= sizeof(cw_call_event)) on_call(*static_cast<const cw_call_event*>(data));
      break;
    case CW_REC_SWITCH:
      if (size >= sizeof(cw_switch_event)) {
        const auto& e = *static_cast<const cw_switch_event*>(data);
        SwitchRecord s = decode_switch(e);
        s.ts_ns += offset_;
        name_thread(e.prev_tid, e.prev_pid, comm_string(e.prev_comm), e.hdr.cgroup_id);
        name_thread(e.next_tid, e.next_pid, comm_string(e.next_comm), e.next_cgroup_id);
        ++sum_.switches;
        stats_.add_host("sched_switch");
        writer_.push(s);
      }
      break;
    case CW_REC_WAKEUP:
      if (size >= sizeof(cw_wakeup_event)) {
        const auto& e = *static_cast<const cw_wakeup_event*>(data);
        WakeupRecord w = decode_wakeup(e);
        w.ts_ns += offset_;
        name_thread(e.tid, e.pid, comm_string(e.comm), e.cgroup_id);
        name_thread(e.hdr.tid, e.hdr.pid, comm_string(e.waker_comm), e.hdr.cgroup_id);
        ++sum_.wakeups;
        stats_.add_host("wakeup");
        writer_.push(w);
      }
      break;
    case CW_REC_PROC:
      if (size >= sizeof(cw_proc_event)) on_proc(*static_cast<const cw_proc_event*>(data));
      break;
    case CW_REC_SOCK:
      on_sock(data, size);
      break;
    case CW_REC_LISTEN:
      if (size >= sizeof(cw_listen_event)) on_listen(*static_cast<const cw_listen_event*>(data));
      break;
    case CW_REC_HOST:
      if (size >= sizeof(cw_host_event)) {
        const auto& e = *static_cast<const cw_host_event*>(data);
        CallRecord c = decode_host(e);
        c.ts_ns += offset_;
        if (c.pid) name_thread(c.tid, c.pid, {}, e.hdr.cgroup_id);
        ++sum_.host_events;
        const OpInfo* op = find_op(e.hdr.op);  // block_rq, tcp_retransmit(6), oom_kill
        stats_.add_host(op ? std::string(op->name) : std::string("host"));
        // block_rq has a duration and is a call in the DB (stats lists it): the endpoint too.
        if (metrics_ && op && op->is_call) metrics_->observe(c.op, c.dur_ns, c.ret != 0);
        writer_.push(c);
      }
      break;
  }
}

void Session::on_call(const cw_call_event& e) {
  CallRecord c = decode_call(e);
  c.ts_ns += offset_;
  ensure_process(c.pid, c.ts_ns + c.dur_ns);
  c.cgroup_id = known_[c.pid].cgroup_id;  // per process: not read on the probe's hot path
  if (!named_tids_.count(c.tid)) name_thread(c.tid, c.pid, read_comm(c.pid, c.tid), c.cgroup_id);
  if (o_.stacks) {
    if (e.stack_id >= 0 || e.py_stack) c.stack_hash = stack_for(c.pid, e.stack_id, e.py_stack);
    stack_policy_.observe(c.pid, c.op, static_cast<uint64_t>(std::max<int64_t>(0, c.dur_ns)));
  }
  stats_.add_call(c.op, c.dur_ns, c.ret != 0);
  if (metrics_) metrics_->observe(c.op, c.dur_ns, c.ret != 0);
  ++sum_.calls;
  ++calls_recorded_;
  if (e.run_calls) push_run(run_of(e), static_cast<int64_t>(c.cgroup_id), true);
  // Handed to the writer once per consume round (flush_calls): one lock per round, not per call.
  call_batch_.push_back(c);
}

// The thread's calls counted in the kernel since its previous recorded call, as one row the
// correlator reads like the calls it stands for (docs/COLLECTOR.md "Aggregated calls").
// batch: with the round's calls (before the call that carried it); else straight to the writer
// (the runs still open at stop).
void Session::push_run(const cw_run& r, int64_t cgroup_id, bool batch) {
  CallRecord run = decode_run(r);
  run.ts_ns += offset_;
  run.cgroup_id = static_cast<uint64_t>(cgroup_id);
  if (batch) call_batch_.push_back(run);
  else writer_.push(run);
}

// Fast calls counted in the kernel since the last read: into the rollups (stats, fleet), the
// live table, Prometheus and the stack thresholds, as if each had been recorded.
void Session::read_call_agg() {
  if (!call_agg_) return;
  for (AggregatedCallsRecord& r : call_agg_->read()) {
    r.ts_ns += offset_;
    std::vector<std::pair<int64_t, uint64_t>> durs;
    for (const auto& [bucket, n] : r.hist) {
      const auto low = LatencyHistogram::bucket_low(bucket);
      if (o_.stacks) stack_policy_.observe(r.pid, r.op, low, static_cast<uint32_t>(std::min<uint64_t>(n, UINT32_MAX)));
      durs.emplace_back(static_cast<int64_t>(low), n);
    }
    stats_.add_counted(r);
    if (metrics_) metrics_->observe_counted(r.op, durs, r.count, r.sum_ns, r.errors);
    writer_.push_aggregated(std::move(r));
  }
}

void Session::on_proc(const cw_proc_event& e) {
  CallRecord c = decode_proc(e);
  c.ts_ns += offset_;
  const uint32_t pid = e.hdr.pid;
  switch (e.hdr.op) {
    case CW_OP_PROC_EXEC:
      // The loader maps the libraries right after exec: the mmap watch names the process
      // when one is a CUDA library; without it, look twice, then the periodic scan.
      if (!mmap_watch_) {
        pending_rescans_.push_back({monotonic_ns() + 50'000'000, pid});
        pending_rescans_.push_back({monotonic_ns() + 300'000'000, pid});
      }
      if (!known_.count(pid)) return;
      known_.erase(pid);  // new image: new identity, new maps
      forget_python(pid);
      ensure_process(pid, c.ts_ns);
      break;
    case CW_OP_PROC_FORK: {
      if (!o_.pids.empty() && allowed_.count(pid)) allowed_.insert(e.child_pid);
      // The parent comes from the event: a short-lived child (an NCCL rank, a dataloader
      // worker) may be gone from /proc before it is read.
      ensure_process(e.child_pid, c.ts_ns, pid);
      break;
    }
    case CW_OP_PROC_EXIT: {
      ProcessRecord p;
      p.pid = pid;
      p.ppid = e.ppid;
      p.comm = comm_string(e.comm);
      p.last_ns = c.ts_ns;
      p.exit_code = e.exit_code;
      // A process the user named with --pid: its end is news (the trace goes on, for its
      // children and for the record); others' exits are only stored, or a busy host would
      // fill the terminal.
      if (std::find(o_.pids.begin(), o_.pids.end(), pid) != o_.pids.end())
        say("pid " + std::to_string(pid) + " (" + sanitize_untrusted(p.comm, 64) + ") exited with code " +
            std::to_string(e.exit_code) + "; still tracing");
      writer_.push_meta(p);
      if (auto it = known_.find(pid); it != known_.end()) it->second.last_ns = c.ts_ns;
      bpf_.untrace_pid(pid);
      tree_.erase(pid);
      for (uint16_t op : stack_policy_.forget(pid)) bpf_.clear_stack_threshold(pid, op);
      forget_python(pid);
      break;
    }
  }
  stats_.add_host(e.hdr.op == CW_OP_PROC_EXEC ? "exec" : e.hdr.op == CW_OP_PROC_FORK ? "fork" : "exit");
  ++sum_.host_events;
  writer_.push(c);
}

void Session::on_sock(const void* data, size_t size) {
  auto r = decode_sock(data, size);
  if (!r) return;
  r->ts_ns += offset_;
  if (r->enter_ns) r->enter_ns += offset_;
  tracker_.add(*r);
  send_waits_.add(*r);
}

// One page_alloc point event per process that allocated since the last drain.
void Session::emit_page_allocs(int64_t now_mono) {
  page_allocs_to_mono_ = now_mono;
  for (const auto& [pid, agg] : bpf_.drain_page_agg()) {
    CallRecord c = decode_page_agg(pid, agg);
    c.ts_ns = now_mono + offset_;
    writer_.push(c);
    stats_.add_host("page_alloc");
  }
}

}  // namespace causeway::collector
