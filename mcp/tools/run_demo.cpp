#include <unistd.h>

#include <filesystem>

#include "mcp/backends.h"
#include "mcp/text_render.h"
#include "mcp/tools/common.h"
#include "mcp/tools/tools.h"
#include "tracedb/open.h"

namespace causeway::mcp::tools {
namespace {

// The scratch DB lives in its own folder and is never the served DB, even if someone points
// --db at the scratch folder: the served path is compared after resolving both.
Result<std::string> scratch_path(const ServerConfig& cfg, const std::string& scenario) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path dir = cfg.scratch_dir.empty() ? fs::temp_directory_path(ec) / ("causeway-mcp-demo-" + std::to_string(getuid()))
                                         : fs::path(cfg.scratch_dir);
  fs::create_directories(dir, ec);
  if (ec) return make_error("demo_failed", "Cannot create the demo scratch folder " + dir.string() + ": " + ec.message());
  fs::permissions(dir, fs::perms::owner_all, fs::perm_options::replace, ec);
  fs::path db = dir / ("demo-" + scenario + ".db");
  fs::path served = fs::weakly_canonical(cfg.db_path, ec);
  if (fs::weakly_canonical(db, ec) == served)
    return make_error("demo_failed", "The scratch DB would be the served trace DB; start the server with another --db.");
  // A fresh DB per run: the answer describes exactly this scenario.
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) fs::remove(db.string() + suffix, ec);
  return db.string();
}

}  // namespace

static Result<ToolOutput> run_demo(const json& args, ToolContext& ctx) {
  std::string scenario = args.value("scenario", "incident");
  std::string names;
  bool known = false;
  for (const auto& s : demo_scenario_list()) {
    names += (names.empty() ? "" : ", ") + s.name;
    known = known || s.name == scenario;
  }
  if (!known) return make_error("invalid_argument", "Unknown scenario \"" + scenario + "\". Available: " + names + ".");
  auto path = scratch_path(ctx.config, scenario);
  if (!path) return path.error();
  ctx.progress(0, 3, "generating scenario " + scenario);
  auto written = write_demo(path.value(), scenario, static_cast<uint64_t>(args.value("seed", 1)));
  if (!written) return written.error();
  if (ctx.cancel.cancelled()) return make_error("cancelled", "run_demo was cancelled.");
  ctx.progress(1, 3, "computing stats");
  auto db = open_read_only(path.value());
  if (!db) return db.error();
  StatsQuery sq;
  sq.top_n = 10;
  auto stats = stats_document(db->get(), sq);
  if (!stats) return stats.error();
  ctx.progress(2, 3, "loading causal chains");
  ChainQuery cq;
  cq.limit = 5;
  auto chains = chains_document(db->get(), cq);
  if (!chains) return chains.error();
  json d = {{"scenario", scenario},
            {"db", std::filesystem::path(path.value()).filename().string()},
            {"session_id", written.value().value("session_id", 0)},
            {"events_written", written.value().value("events_written", 0)},
            {"stats", stats.value()},
            {"chains", chains.value().value("chains", json::array())},
            {"truncated", false}};
  fit_json_budget(d, "chains", ctx.config.limits.structured_bytes());
  ctx.progress(3, 3, "done");

  TextBuilder t(ctx.config.limits.max_text_bytes);
  t.line("demo " + scenario + ": " + std::to_string(d["events_written"].get<int64_t>()) +
         " events written to a scratch DB (not the served trace DB)");
  for (const auto& o : d["stats"]["ops"])
    t.line("  " + o["op"].get<std::string>() + " pid " + std::to_string(o["pid"].get<int64_t>()) + ": " +
           std::to_string(o["count"].get<int64_t>()) + " calls, p99 " + us_text(o["p99_us"].get<double>()) + ", max " +
           us_text(o["max_us"].get<double>()));
  t.line(render_chains(d["chains"], ctx.config.limits.max_text_bytes / 2, ""));
  return ToolOutput{std::move(d), t.str()};
}

}  // namespace causeway::mcp::tools

CAUSEWAY_TOOL(run_demo, causeway::mcp::tools::run_demo)
