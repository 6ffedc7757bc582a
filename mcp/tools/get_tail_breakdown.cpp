#include "diagnosis/tail_breakdown.h"
#include "mcp/text_render.h"
#include "mcp/tools/common.h"
#include "mcp/tools/tools.h"

namespace causeway::mcp::tools {

static Result<ToolOutput> get_tail_breakdown(const json& args, ToolContext& ctx) {
  TailQuery q;
  auto since = duration_arg(args, "since");
  if (!since) return since.error();
  q.since_ns = since.value();
  q.pid = pid_arg(args);
  q.op = string_arg(args, "op");
  q.quantile = args.value("quantile", 0.99);
  q.limit = static_cast<size_t>(args.value("limit", 5));
  auto db = open_db(ctx);
  if (!db) return db.error();
  CancelScope scope(ctx.cancel, db->get());
  auto r = tail_breakdown(db->get(), q);
  if (!r) return r.error();
  json d = tail_to_json(*r);
  fit_json_budget(d, "ops", ctx.config.limits.structured_bytes());

  TextBuilder t(ctx.config.limits.max_text_bytes);
  t.line(std::string(kDataNotice));
  // The text is ours; only the process names and paths it quotes came from the trace.
  const std::vector<std::string> traced = traced_strings(d);
  std::string text = tail_to_text(*r);
  for (size_t pos = 0; pos < text.size();) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    t.line(own_text(std::string_view(text).substr(pos, nl - pos), traced, 600));
    pos = nl + 1;
  }
  if (d["ops"].empty() && !q.op) t.line("(ops need at least 20 calls in the window; narrow since or check get_trace_stats)");
  bool any_unexplained = false;
  for (const auto& o : d["ops"]) any_unexplained = any_unexplained || o["unexplained"]["calls"].get<uint64_t>() > 0;
  if (any_unexplained)
    t.line("unexplained tail calls had no diagnosed cause: look at them with run_sql on v_calls (dur_us >= threshold_us) "
           "and their stacks with get_stacks");
  return ToolOutput{std::move(d), t.str()};
}

}  // namespace causeway::mcp::tools

CAUSEWAY_TOOL(get_tail_breakdown, causeway::mcp::tools::get_tail_breakdown)
