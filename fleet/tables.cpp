#include "fleet/tables.h"

#include "tracedb/event_columns.h"
#include "tracedb/op_args.h"

namespace causeway::fleet {

namespace {

std::vector<Column> cols(std::initializer_list<const char*> spec) {
  // "name Type" pairs; types with spaces are not needed.
  std::vector<Column> out;
  for (const char* s : spec) {
    std::string t(s);
    size_t sp = t.find(' ');
    out.push_back({t.substr(0, sp), t.substr(sp + 1)});
  }
  return out;
}

// The events columns from the one list (tracedb/event_columns.h), but session_id (the host key
// holds it); the rowid becomes src_id. A column added to the list is shipped with its type.
std::pair<std::string, std::vector<Column>> event_columns() {
  std::string select;
  std::vector<Column> out;
  for (const EventColumn& c : kEventColumns) {
    if (c.name == col_name(EventCol::session_id)) continue;
    select += (select.empty() ? "" : ", ") + std::string(c.name);
    out.push_back({c.name == col_name(EventCol::id) ? "src_id" : std::string(c.name), c.nullable ? "Nullable(Int64)" : "Int64"});
  }
  return {select, out};
}

// The events column that holds field `name` of the collective layout (tracedb/op_args.h).
std::string collective_column(std::string_view name) {
  const int slot = arg_slot(arg_layout::coll, name);
  return std::string(col_name(static_cast<EventCol>(arg_col(slot))));
}

// The collective entries' columns: the call, then its communicator, seq, rank and nranks.
std::string collective_select() {
  std::string s = "SELECT id, ts_ns, dur_ns, pid, tid, op_id";
  for (std::string_view field : {"comm_hash", "seq", "rank", "nranks"}) s += ", " + collective_column(field);
  return s;
}

std::vector<TableSpec> build() {
  const auto [event_select, event_cols] = event_columns();
  using enum TableKind;
  return {
      {"sessions", Snapshot,
       "SELECT source_kind, coalesce(label, ''), coalesce(kernel, ''), coalesce(gpus, ''), coalesce(driver_version, ''), "
       "coalesce(cuda_version, ''), tool_version, stopped_ns, rolled_up_to_ns, clock_offset_ns, coalesce(system, '') "
       "FROM sessions WHERE id = ?1",
       cols({"source_kind String", "label String", "kernel String", "gpus String", "driver_version String", "cuda_version String",
             "tool_version String", "stopped_ns Nullable(Int64)", "rolled_up_to_ns Int64", "clock_offset_ns Nullable(Int64)",
             "system String"}),
       "", ""},
      {"ops", Snapshot,
       "SELECT id, source, name, kind, coalesce(family, ''), arg_names FROM ops WHERE ?1 IS NOT NULL ORDER BY id",
       cols({"id Int64", "source String", "name String", "kind String", "family String", "arg_names String"}), "id", ""},
      {"processes", Snapshot,
       "SELECT pid, ppid, coalesce(comm, ''), coalesce(cmdline, ''), coalesce(exe, ''), cgroup_id, coalesce(container_id, ''), "
       "first_ns, last_ns, exit_code, coalesce(cgroup_path, ''), rank, world_size, local_rank, coalesce(rank_source, ''), "
       "coalesce(job_id, '') FROM processes WHERE session_id = ?1 ORDER BY pid",
       cols({"pid Int64", "ppid Nullable(Int64)", "comm String", "cmdline String", "exe String", "cgroup_id Nullable(Int64)",
             "container_id String", "first_ns Nullable(Int64)", "last_ns Nullable(Int64)", "exit_code Nullable(Int64)",
             "cgroup_path String", "rank Nullable(Int64)", "world_size Nullable(Int64)", "local_rank Nullable(Int64)",
             "rank_source String", "job_id String"}),
       "pid", ""},
      {"threads", Snapshot,
       "SELECT tid, pid, coalesce(comm, ''), cgroup_id FROM threads WHERE session_id = ?1 ORDER BY tid",
       cols({"tid Int64", "pid Int64", "comm String", "cgroup_id Nullable(Int64)"}), "tid", ""},
      {"cgroups", Snapshot,
       "SELECT cgroup_id, path, coalesce(container_id, ''), coalesce(pod, '') FROM cgroups WHERE session_id = ?1 "
       "ORDER BY cgroup_id",
       cols({"cgroup_id Int64", "path String", "container_id String", "pod String"}), "cgroup_id", ""},
      {"chains", Snapshot,
       "SELECT id, created_ns, from_ns, to_ns, severity, cause, pid, coalesce(comm, ''), coalesce(op, ''), calls, p50_us, p99_us, "
       "slow_share, culprit_pid, coalesce(culprit_comm, ''), culprit_share, summary, doc FROM chains WHERE session_id = ?1 "
       "ORDER BY id",
       cols({"id String", "created_ns Int64", "from_ns Int64", "to_ns Int64", "severity String", "cause String",
             "pid Nullable(Int64)", "comm String", "op String", "calls Nullable(Int64)", "p50_us Nullable(Float64)",
             "p99_us Nullable(Float64)", "slow_share Nullable(Float64)", "culprit_pid Nullable(Int64)", "culprit_comm String",
             "culprit_share Nullable(Float64)", "summary String", "doc String"}),
       "id", ""},
      {"call_causes", Snapshot,
       "SELECT op_id, pid, tid, ts_ns, gap, dur_ns, lost_ns, cause, chain_id FROM call_causes WHERE session_id = ?1 "
       "ORDER BY op_id, pid, tid, ts_ns, gap",
       cols({"op_id Int64", "pid Int64", "tid Int64", "ts_ns Int64", "gap Int64", "dur_ns Int64", "lost_ns Int64", "cause String",
             "chain_id String"}),
       "op_id, pid, tid, ts_ns, gap", ""},
      {"collector_stats", Snapshot,
       "SELECT name, value, updated_ns FROM collector_stats WHERE session_id = ?1 ORDER BY name",
       cols({"name String", "value Int64", "updated_ns Int64"}), "name", ""},
      {"engines", Snapshot, "SELECT pid, engine, url FROM engines WHERE session_id = ?1 ORDER BY pid",
       cols({"pid Int64", "engine String", "url String"}), "pid", ""},
      // Before `events`, so a host's numbering of its ranks is in the store seconds after its
      // ship starts (another host's ship may be waiting for it: fleet/ship_table.cpp).
      // The collective entries of `events` again, ordered for the straggler query and with the
      // communicator and rank resolved where init was not traced (comm, seq, rank, nranks: the
      // collective layout's slots, tracedb/op_args.h, docs/TRACEDB.md "Op argument layouts"), seq
      // aligned across the ranks and hosts of the job; handle and traced_seq keep comm and seq as
      // traced, so the next ship reads back how each rank was numbered (docs/FLEET.md "Ranks without init").
      {"collectives", Append,
       collective_select() + " FROM events WHERE session_id = ?1 AND id > ?2 "
       "AND op_id IN (SELECT id FROM ops WHERE family = 'collective') ORDER BY id LIMIT ?3",
       cols({"src_id Int64", "ts_ns Int64", "dur_ns Int64", "pid Int64", "tid Int64", "op_id Int64", "comm Int64", "seq Int64",
             "rank Int64", "nranks Int64", "rank_source String", "handle Int64", "traced_seq Int64"}),
       "ts_ns, src_id", "ts_ns", RowKind::Collective},
      {"events", Append, "SELECT " + event_select + " FROM events WHERE session_id = ?1 AND id > ?2 ORDER BY id LIMIT ?3",
       event_cols, "ts_ns, src_id", "ts_ns"},
      {"sched", Append,
       "SELECT id, ts_ns, cpu, prev_tid, prev_pid, prev_prio, prev_state, next_tid, next_pid, next_prio FROM sched "
       "WHERE session_id = ?1 AND id > ?2 ORDER BY id LIMIT ?3",
       cols({"src_id Int64", "ts_ns Int64", "cpu Int64", "prev_tid Int64", "prev_pid Int64", "prev_prio Nullable(Int64)",
             "prev_state Int64", "next_tid Int64", "next_pid Int64", "next_prio Nullable(Int64)"}),
       "ts_ns, src_id", "ts_ns"},
      {"wakeups", Append,
       "SELECT id, ts_ns, tid, pid, waker_tid, waker_pid, target_cpu FROM wakeups WHERE session_id = ?1 AND id > ?2 ORDER BY id "
       "LIMIT ?3",
       cols({"src_id Int64", "ts_ns Int64", "tid Int64", "pid Int64", "waker_tid Nullable(Int64)", "waker_pid Nullable(Int64)",
             "target_cpu Nullable(Int64)"}),
       "ts_ns, src_id", "ts_ns"},
      // Per op, process and second; `hist` is the trace DB's histogram blob (tracedb/histogram.h).
      {"rollups", Append,
       "SELECT rowid, op_id, pid, sec, count, sum_ns, min_ns, max_ns, errors, hist FROM rollups WHERE session_id = ?1 "
       "AND rowid > ?2 ORDER BY rowid LIMIT ?3",
       cols({"src_id Int64", "op_id Int64", "pid Int64", "sec Int64", "count Int64", "sum_ns Int64", "min_ns Int64",
             "max_ns Int64", "errors Int64", "hist String"}),
       "sec, src_id", "sec * 1000000000"},
      // Stacks are shared by every session of a trace DB (deduplicated by hash): each session
      // carries the DB's stacks under its own key, so events.stack_id joins within the key.
      {"stacks", Append, "SELECT id, hash, frames FROM stacks WHERE ?1 IS NOT NULL AND id > ?2 ORDER BY id LIMIT ?3",
       cols({"src_id Int64", "hash Int64", "frames String"}), "src_id", ""},
      {"requests", Append,
       "SELECT rowid, request_id, id_generated, server_pid, fd, method, path, tenant, peer, start_ns, end_ns, first_byte_ns, "
       "first_token_ns, last_byte_ns, ttft_ns, e2e_ns, itl_max_ns, coalesce(itl_us, '[]'), status, prompt_bytes, response_bytes, "
       "streamed, events, complete, tls, coalesce(read_end_ns, end_ns), api_wait_ns FROM requests WHERE session_id = ?1 "
       "AND rowid > ?2 ORDER BY rowid LIMIT ?3",
       cols({"src_id Int64", "request_id String", "id_generated Int64", "server_pid Int64", "fd Int64", "method String",
             "path String", "tenant String", "peer String", "start_ns Int64", "end_ns Int64", "first_byte_ns Nullable(Int64)",
             "first_token_ns Nullable(Int64)", "last_byte_ns Nullable(Int64)", "ttft_ns Nullable(Int64)",
             "e2e_ns Nullable(Int64)", "itl_max_ns Nullable(Int64)", "itl_us String", "status Int64", "prompt_bytes Int64",
             "response_bytes Int64", "streamed Int64", "events Int64", "complete Int64",
             // fleet schema 4: arrival times (docs/INFERENCE.md "Arrival time") and TLS
             "tls Int64", "read_end_ns Int64", "api_wait_ns Nullable(Int64)"}),
       "start_ns, src_id", "start_ns"},
      {"engine_metrics", Append,
       "SELECT rowid, ts_ns, pid, engine, name, labels, value FROM engine_metrics WHERE session_id = ?1 AND rowid > ?2 "
       "ORDER BY rowid LIMIT ?3",
       cols({"src_id Int64", "ts_ns Int64", "pid Int64", "engine String", "name String", "labels String", "value Float64"}),
       "ts_ns, src_id", "ts_ns"},
  };
}

}  // namespace

const std::vector<TableSpec>& table_specs() {
  static const std::vector<TableSpec> specs = build();
  return specs;
}

}  // namespace causeway::fleet
