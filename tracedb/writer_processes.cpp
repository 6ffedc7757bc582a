// The writer's process tables: processes, threads, cgroups and stacks (the rows events refer
// to), each with its columns listed once and bound by name (tracedb/table_columns.h).
#include <nlohmann/json.hpp>

#include "tracedb/store_writer.h"
#include "tracedb/store_writer_internal.h"
#include "tracedb/table_columns.h"

namespace causeway {
namespace writer_processes {

enum class ProcessCol {
  session_id, pid, ppid, comm, cmdline, exe, cgroup_id, container_id, first_ns, last_ns, exit_code, cgroup_path,
  rank, world_size, local_rank, rank_source, job_id, count_
};
inline constexpr TableColumns<ProcessCol> kProcessColumns{
    "processes",
    {"session_id", "pid", "ppid", "comm", "cmdline", "exe", "cgroup_id", "container_id", "first_ns", "last_ns",
     "exit_code", "cgroup_path", "rank", "world_size", "local_rank", "rank_source", "job_id"}};
// The first parent seen wins: it launched the process; an exit seen after a reparent names the
// reaper (init or a subreaper) instead.
constexpr const char* kProcessOnConflict =
    " ON CONFLICT (session_id, pid) DO UPDATE SET "
    "ppid = coalesce(ppid, excluded.ppid), comm = coalesce(nullif(excluded.comm, ''), comm), "
    "cmdline = coalesce(nullif(excluded.cmdline, ''), cmdline), exe = coalesce(nullif(excluded.exe, ''), exe), "
    "cgroup_id = coalesce(nullif(excluded.cgroup_id, 0), cgroup_id), "
    "container_id = coalesce(nullif(excluded.container_id, ''), container_id), "
    "first_ns = min(coalesce(first_ns, excluded.first_ns), coalesce(excluded.first_ns, first_ns)), "
    "last_ns = max(coalesce(last_ns, excluded.last_ns), coalesce(excluded.last_ns, last_ns)), "
    "exit_code = coalesce(excluded.exit_code, exit_code), "
    "cgroup_path = coalesce(nullif(excluded.cgroup_path, ''), cgroup_path), "
    "rank = coalesce(excluded.rank, rank), world_size = coalesce(excluded.world_size, world_size), "
    "local_rank = coalesce(excluded.local_rank, local_rank), rank_source = coalesce(excluded.rank_source, rank_source), "
    "job_id = coalesce(excluded.job_id, job_id)";

enum class ThreadCol { session_id, tid, pid, comm, cgroup_id, count_ };
inline constexpr TableColumns<ThreadCol> kThreadColumns{"threads", {"session_id", "tid", "pid", "comm", "cgroup_id"}};
constexpr const char* kThreadOnConflict =
    " ON CONFLICT (session_id, tid) DO UPDATE SET pid = excluded.pid, comm = coalesce(nullif(excluded.comm, ''), comm), "
    "cgroup_id = coalesce(excluded.cgroup_id, cgroup_id)";

enum class CgroupCol { session_id, cgroup_id, path, container_id, pod, count_ };
inline constexpr TableColumns<CgroupCol> kCgroupColumns{"cgroups",
                                                        {"session_id", "cgroup_id", "path", "container_id", "pod"}};
// An id is resolved once per session; a path found later never gives way to "" (gone).
constexpr const char* kCgroupOnConflict =
    " ON CONFLICT (session_id, cgroup_id) DO UPDATE SET path = excluded.path, container_id = excluded.container_id, "
    "pod = excluded.pod WHERE excluded.path != ''";

enum class StackCol { id, hash, frames, count_ };
inline constexpr TableColumns<StackCol> kStackColumns{"stacks", {"id", "hash", "frames"}};

}  // namespace writer_processes

// Function-local using-directives only: the CI's unity build puts this file beside others.
Result<void> StoreWriter::prepare_process_statements(sqlite3* h) {
  using namespace writer_processes;
  using namespace store_writer_detail;
  if (auto r = prepare_into(h, upsert_process_, kProcessColumns.insert_sql() + kProcessOnConflict); !r) return r;
  if (auto r = prepare_into(h, upsert_thread_, kThreadColumns.insert_sql() + kThreadOnConflict); !r) return r;
  if (auto r = prepare_into(h, upsert_cgroup_, kCgroupColumns.insert_sql() + kCgroupOnConflict); !r) return r;
  return prepare_into(h, ins_stack_, kStackColumns.insert_sql("INSERT OR IGNORE"));
}

int StoreWriter::write_meta_row(const ProcessRecord& p) {
  using namespace writer_processes;
  using namespace store_writer_detail;
  RowBind<ProcessCol> row(upsert_process_);
  using C = ProcessCol;
  row.set(C::session_id, session_id_)
      .set(C::pid, int64_t{p.pid})
      .set_opt(C::ppid, p.ppid)
      .set(C::comm, p.comm)
      .set(C::cmdline, p.cmdline)
      .set(C::exe, p.exe)
      .set(C::cgroup_id, static_cast<int64_t>(p.cgroup_id))
      .set(C::container_id, p.container_id)
      .set_nonzero(C::first_ns, p.first_ns)
      .set_nonzero(C::last_ns, p.last_ns)
      .set_opt(C::exit_code, p.exit_code)
      .set_nonempty(C::cgroup_path, p.cgroup_path);
  if (const auto& r = p.launcher_rank) {
    row.set(C::rank, int64_t{r->rank})
        .set(C::world_size, int64_t{r->world_size})
        .set_opt(C::local_rank, r->local_rank)
        .set(C::rank_source, r->source)
        .set(C::job_id, r->job_id);
  } else {
    for (C c : {C::rank, C::world_size, C::local_rank, C::rank_source, C::job_id}) row.null(c);
  }
  return finish_meta(upsert_process_);
}

int StoreWriter::write_meta_row(const ThreadRecord& t) {
  using namespace writer_processes;
  using namespace store_writer_detail;
  RowBind<ThreadCol>(upsert_thread_)
      .set(ThreadCol::session_id, session_id_)
      .set(ThreadCol::tid, int64_t{t.tid})
      .set(ThreadCol::pid, int64_t{t.pid})
      .set(ThreadCol::comm, t.comm)
      .set_nonzero(ThreadCol::cgroup_id, static_cast<int64_t>(t.cgroup_id));
  return finish_meta(upsert_thread_);
}

int StoreWriter::write_meta_row(const CgroupRecord& g) {
  using namespace writer_processes;
  using namespace store_writer_detail;
  RowBind<CgroupCol>(upsert_cgroup_)
      .set(CgroupCol::session_id, session_id_)
      .set(CgroupCol::cgroup_id, static_cast<int64_t>(g.id))
      .set(CgroupCol::path, g.path)
      .set_nonempty(CgroupCol::container_id, g.container_id)
      .set_nonempty(CgroupCol::pod, g.pod);
  return finish_meta(upsert_cgroup_);
}

int StoreWriter::write_meta_row(const StackRecord& st) {
  using namespace writer_processes;
  using namespace store_writer_detail;
  RowBind<StackCol>(ins_stack_)
      .set(StackCol::id, static_cast<int64_t>(st.hash))
      .set(StackCol::hash, static_cast<int64_t>(st.hash))
      .set(StackCol::frames,
           nlohmann::json(st.frames).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  return finish_meta(ins_stack_);
}

}  // namespace causeway
