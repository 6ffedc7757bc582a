#include "mcp/backends.h"
#include "tracedb/sqlite_handle.h"
#include "mcp/text_render.h"
#include "mcp/tools/common.h"
#include "mcp/tools/tools.h"

namespace causeway::mcp::tools {

json example_queries() {
  return json::array({
      {{"question", "Slowest CUDA calls in the latest session"},
       {"sql", "SELECT op, pid, comm, dur_us, ts_ns FROM v_calls WHERE session_id = (SELECT MAX(id) FROM sessions) "
               "AND source = 'cuda' ORDER BY dur_us DESC LIMIT 20"}},
      {{"question", "Calls per second and total time of one op (cheap, from rollups)"},
       {"sql", "SELECT sec, calls, total_us, max_us FROM v_op_seconds WHERE op = 'cudaStreamSynchronize' "
               "AND session_id = (SELECT MAX(id) FROM sessions) ORDER BY sec"}},
      {{"question", "Who preempted threads of pid 4821 (CPU contention)"},
       {"sql", "SELECT next_pid, next_comm, COUNT(*) AS switches FROM v_sched WHERE prev_pid = 4821 AND prev_state = 'R' "
               "GROUP BY next_pid, next_comm ORDER BY switches DESC LIMIT 10"}},
      {{"question", "Block I/O and OOM events around a time"},
       {"sql", "SELECT ts_ns, event, pid, comm, a0, a1, arg_names FROM v_host_events WHERE source IN ('io', 'mem') "
               "AND ts_ns BETWEEN 1700000000000000000 AND 1700000005000000000 ORDER BY ts_ns LIMIT 50"}},
      {{"question", "Late rank of an NCCL collective"},
       {"sql", "SELECT seq, rank, pid, ts_ns, dur_us FROM v_nccl_calls WHERE comm_hash = (SELECT comm_hash FROM v_nccl_calls LIMIT 1) "
               "ORDER BY seq, ts_ns LIMIT 50"}},
      {{"question", "Diagnosed chains, one line each"},
       {"sql", "SELECT severity, cause, op, comm, calls, p99_us, culprit_comm, summary FROM v_chains ORDER BY created_ns DESC LIMIT 10"}},
  });
}

static Result<ToolOutput> describe_schema(const json& args, ToolContext& ctx) {
  auto db = open_db(ctx);
  if (!db) return db.error();
  auto r = schema_document(db->get());
  if (!r) return r.error();
  json objects = json::array();
  auto only = string_arg(args, "object");
  for (auto& o : r.value()["objects"])
    if (!only || o["name"] == *only) objects.push_back(std::move(o));
  if (only && objects.empty())
    return make_error("invalid_argument", "No table or view named \"" + *only + "\"; call describe_schema without `object` to list them.");
  // Row counts tell the model which tables are worth querying and how big a scan is.
  CancelScope scope(ctx.cancel, db->get());
  for (auto& o : objects) {
    if (o.value("type", "") != "table") continue;
    std::string name = o["name"].get<std::string>();
    std::string quoted = "\"";
    for (char c : name) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
    auto n = query_int(db->get(), "SELECT COUNT(*) FROM " + quoted + "\"");
    if (n && n.value()) o["rows"] = *n.value();
  }
  json d = {{"objects", std::move(objects)}};
  // sqlguard's description carries examples its tests run; ours are the fallback.
  const json& full = r.value();
  d["examples"] = full.contains("examples") && full["examples"].is_array() && !full["examples"].empty() ? full["examples"] : example_queries();
  for (const char* extra : {"conventions", "functions", "limits"})
    if (full.contains(extra) && !only) d[extra] = full[extra];

  // The schema is what every query is written from: its text takes two or three text shares.
  const size_t text_bytes = ctx.config.limits.max_text_bytes * (only ? 2 : 3);
  fit_json_budget(d, "objects", ctx.config.limits.structured_bytes(text_bytes));
  TextBuilder t(text_bytes);
  t.line("Timestamps are Unix ns; *_us columns are microseconds. Prefer the v_* views. Scope by session_id (latest: SELECT MAX(id) FROM sessions).");
  if (d.contains("conventions"))
    for (const auto& c : d["conventions"]) t.line("convention: " + (c.is_string() ? c.get<std::string>() : c.dump()));
  // Views first: they are what queries should use.
  for (int pass = 0; pass < 2; ++pass)
    for (const auto& o : d["objects"]) {
      if ((o["type"] == "view") != (pass == 0)) continue;
      std::string cols;
      for (const auto& c : o["columns"]) {
        cols += (cols.empty() ? "" : ", ") + c["name"].get<std::string>();
        if (c.contains("unit")) cols += " [" + c["unit"].get<std::string>() + "]";
      }
      std::string desc = o.value("description", "");
      std::string rows = o.contains("rows") ? " (" + std::to_string(o["rows"].get<int64_t>()) + " rows)" : "";
      t.line(o["type"].get<std::string>() + " " + o["name"].get<std::string>() + rows + (desc.empty() ? "" : " — " + desc) + ": " + cols);
    }
  for (const auto& e : d["examples"]) t.line("example (" + e["question"].get<std::string>() + "): " + e["sql"].get<std::string>());
  return ToolOutput{std::move(d), t.str()};
}

}  // namespace causeway::mcp::tools

CAUSEWAY_TOOL(describe_schema, causeway::mcp::tools::describe_schema)
