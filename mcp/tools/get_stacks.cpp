#include "diagnosis/frames.h"
#include "diagnosis/stacks.h"
#include "mcp/text_render.h"
#include "mcp/tools/common.h"
#include "mcp/tools/tools.h"

namespace causeway::mcp::tools {

static Result<ToolOutput> get_stacks(const json& args, ToolContext& ctx) {
  StackQuery q;
  auto since = duration_arg(args, "since");
  if (!since) return since.error();
  q.since_ns = since.value();
  q.pid = pid_arg(args);
  q.op = string_arg(args, "op");
  q.limit = static_cast<size_t>(args.value("limit", 5));
  auto offset = cursor_offset(args);
  if (!offset) return offset.error();
  q.offset = *offset;
  auto db = open_db(ctx);
  if (!db) return db.error();
  CancelScope scope(ctx.cancel, db->get());
  auto r = top_stacks(db->get(), q);
  if (!r) return r.error();
  json d = stacks_to_json(r.value());
  fit_page(d, "stacks", ctx.config.limits.structured_bytes(), q.offset, r->truncated);

  TextBuilder t(ctx.config.limits.max_text_bytes);
  t.line(std::string(kDataNotice));
  if (d["stacks"].empty())
    t.line("no stacks recorded for these calls" + std::string(q.op ? " (op " + *q.op + ")" : "") +
           "; stacks need `causeway trace` without --no-stack");
  for (const auto& s : d["stacks"]) {
    t.line(s["op"].get<std::string>() + " stack " + s["stack_id"].get<std::string>() + ": " +
           std::to_string(s["calls"].get<int64_t>()) + " calls, total " + us_text(s["total_us"].get<double>()) + ", mean " +
           us_text(s["mean_us"].get<double>()) + ", max " + us_text(s["max_us"].get<double>()));
    int i = 0;
    for (const auto& f : s["frames"]) t.line("  #" + std::to_string(i++) + " " + data_text(frame_json_text(f), 200));
  }
  if (d["calls_without_stack"].get<int64_t>() > 0)
    t.line(std::to_string(d["calls_without_stack"].get<int64_t>()) + " matching calls carry no stack");
  if (d.contains("next_cursor"))
    t.footer("more stacks left out after these " + std::to_string(d["stacks"].size()) +
           "; get the next page with the same arguments plus cursor=\"" + d["next_cursor"].get<std::string>() +
           "\", or filter by op/pid");
  return ToolOutput{std::move(d), t.str()};
}

}  // namespace causeway::mcp::tools

CAUSEWAY_TOOL(get_stacks, causeway::mcp::tools::get_stacks)
