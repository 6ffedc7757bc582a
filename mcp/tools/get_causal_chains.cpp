#include "mcp/backends.h"
#include "diagnosis/frames.h"
#include "mcp/text_render.h"
#include "mcp/tools/common.h"
#include "mcp/tools/tools.h"

namespace causeway::mcp::tools {

// Chains are few per session (one per cause and victim); paging walks this many at most.
constexpr size_t kMaxChainsScanned = 1000;

std::string render_chains(const json& chains, size_t max_text_bytes, const std::string& more) {
  TextBuilder t(max_text_bytes);
  t.line(std::string(kDataNotice));
  if (chains.empty()) t.line("no causal chains in this window (no outliers with an explained cause)");
  for (const auto& c : chains) {
    std::string head = c.value("severity", "?") + " " + c.value("cause", "?");
    if (c.contains("op")) head += " on " + c["op"].get<std::string>();
    if (c.contains("pid")) head += " pid " + std::to_string(c["pid"].get<int64_t>()) + " " + data_text(c.value("comm", ""));
    if (c.contains("calls")) head += ": " + std::to_string(c["calls"].get<int64_t>()) + " calls";
    if (c.contains("p50_us") && c.contains("p99_us"))
      head += ", p50 " + us_text(c["p50_us"].get<double>()) + ", p99 " + us_text(c["p99_us"].get<double>());
    if (c.contains("slow_share")) head += ", slow share " + std::to_string(static_cast<int>(c["slow_share"].get<double>() * 100 + 0.5)) + "%";
    t.line(head + " [id " + c.value("id", "") + "]");
    // Summary, evidence and fix are causeway's analysis: only the traced names they quote are fenced.
    const std::vector<std::string> traced = traced_strings(c);
    t.line("  summary: " + own_text(c.value("summary", ""), traced, 400));
    if (c.contains("culprit") && c["culprit"].is_object()) {
      const auto& k = c["culprit"];
      std::string line = "  culprit: pid " + std::to_string(k.value("pid", 0)) + " " + data_text(k.value("comm", ""));
      if (k.contains("off_cpu_share")) line += ", " + std::to_string(static_cast<int>(k["off_cpu_share"].get<double>() * 100 + 0.5)) + "% of the off-CPU time";
      if (k.contains("cgroup") && k["cgroup"].is_string() && !k["cgroup"].get<std::string>().empty())
        line += ", cgroup " + data_text(k["cgroup"].get<std::string>(), 200);
      if (k.contains("container") && k["container"].is_string()) line += ", container " + data_text(k["container"].get<std::string>());
      if (k.contains("host") && k["host"].is_string()) line += ", host " + data_text(k["host"].get<std::string>());
      t.line(line);
    }
    if (c.contains("requests") && c["requests"].is_array() && !c["requests"].empty()) {
      // A request-level chain: the requests it slowed (ids are the clients' x-request-id).
      std::string ids;
      size_t shown = 0;
      for (const auto& id : c["requests"])
        if (id.is_string() && shown++ < 8) ids += (ids.empty() ? "" : ", ") + data_text(id.get<std::string>(), 64);
      if (c["requests"].size() > 8) ids += ", … " + std::to_string(c["requests"].size() - 8) + " more";
      t.line("  requests slowed: " + ids);
    }
    if (c.contains("evidence"))
      for (const auto& e : c["evidence"]) t.line("  evidence: " + own_text(e.is_string() ? e.get<std::string>() : e.dump(), traced, 300));
    if (c.contains("stack") && c["stack"].is_array() && !c["stack"].empty()) {
      // Chain stacks are stored user frame first (diagnosis/frames.h): the Python line, else the
      // first frame outside the GPU libraries, the C/C++ runtime and the interpreter.
      std::vector<std::string> texts;
      for (const auto& f : c["stack"])
        if (f.is_string()) texts.push_back(f.get<std::string>());
      const auto frames = parse_stack(texts).frames;
      if (!frames.empty()) {
        const bool user = user_frame_index(frames) < frames.size();
        t.line("  call site: " + data_text(frames.front().text, 200) + (user ? "" : " (no user frame in the stack)"));
      }
    }
    if (c.contains("recommendation")) t.line("  fix: " + own_text(c["recommendation"].get<std::string>(), traced, 400));
  }
  if (!more.empty()) t.footer(more);
  return t.str();
}

ToolOutput chains_page(json& chains, const std::optional<std::string>& cause, size_t offset, size_t limit, const Limits& limits) {
  json all = json::array();
  for (auto& c : chains)
    if (!cause || c.value("cause", "") == *cause) all.push_back(std::move(c));
  const size_t total = all.size();
  const size_t from = std::min(offset, total), to = std::min(total, from + limit);
  json page = json::array();
  for (size_t i = from; i < to; ++i) page.push_back(std::move(all[i]));
  json d = {{"chains", std::move(page)}, {"truncated", to < total}, {"total", total}};
  fit_page(d, "chains", limits.structured_bytes(), from, to < total);
  std::string more;
  if (d.contains("next_cursor"))
    more = std::to_string(total - from - d["chains"].size()) + " more chains left out (" + std::to_string(total) +
           " match); get them with the same arguments plus cursor=\"" + d["next_cursor"].get<std::string>() + "\"";
  std::string text = render_chains(d["chains"], limits.max_text_bytes, more);
  return ToolOutput{std::move(d), std::move(text)};
}

static Result<ToolOutput> get_causal_chains(const json& args, ToolContext& ctx) {
  ChainQuery q;
  auto since = duration_arg(args, "since");
  if (!since) return since.error();
  q.since_ns = since.value();
  q.pid = pid_arg(args);
  q.min_severity = string_arg(args, "min_severity");
  if (!q.min_severity) q.min_severity = string_arg(args, "severity");
  auto cause = string_arg(args, "cause");
  auto offset = cursor_offset(args);
  if (!offset) return offset.error();
  size_t limit = static_cast<size_t>(args.value("limit", 10));
  q.limit = kMaxChainsScanned;
  auto db = open_db(ctx);
  if (!db) return db.error();
  CancelScope scope(ctx.cancel, db->get());
  auto doc = chains_document(db->get(), q);
  if (!doc) return doc.error();
  return chains_page(doc.value()["chains"], cause, *offset, limit, ctx.config.limits);
}

}  // namespace causeway::mcp::tools

CAUSEWAY_TOOL(get_causal_chains, causeway::mcp::tools::get_causal_chains)
