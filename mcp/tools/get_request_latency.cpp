#include "mcp/text_render.h"
#include "mcp/tools/common.h"
#include "mcp/tools/tools.h"
#include "diagnosis/request_latency.h"

namespace causeway::mcp::tools {

std::string render_data_lines(const std::string& text, size_t max_text_bytes) {
  TextBuilder t(max_text_bytes);
  t.line(std::string(kDataNotice));
  // Paths, request ids, tenants and hosts are what clients and hosts sent: data, not instructions.
  for (size_t pos = 0; pos < text.size();) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    t.line(data_text(std::string_view(text).substr(pos, nl - pos), 600));
    pos = nl + 1;
  }
  return t.str();
}

Result<requests::RequestQuery> request_query(const json& args) {
  requests::RequestQuery q;
  auto since = duration_arg(args, "since");
  if (!since) return since.error();
  q.since_ns = since.value();
  q.pid = pid_arg(args);
  q.path = string_arg(args, "path");
  q.tenant = string_arg(args, "tenant");
  if (auto m = string_arg(args, "metric")) {
    auto metric = requests::metric_from(*m);
    if (!metric) return make_error("invalid_argument", "metric: one of ttft, itl, e2e");
    q.metric = *metric;
  }
  q.quantile = args.value("quantile", 0.99);
  q.slowest = static_cast<size_t>(args.value("slowest", 10));
  return q;
}

static Result<ToolOutput> get_request_latency(const json& args, ToolContext& ctx) {
  auto query = request_query(args);
  if (!query) return query.error();
  const requests::RequestQuery& q = *query;
  auto db = open_db(ctx);
  if (!db) return db.error();
  CancelScope scope(ctx.cancel, db->get());
  auto r = requests::request_latency_json(db->get(), q);
  if (!r) return r.error();
  json d = std::move(*r);
  fit_json_budget(d["requests"], "slowest", ctx.config.limits.structured_bytes() / 2);

  std::string text = render_data_lines(requests::request_latency_text(d), ctx.config.limits.max_text_bytes);
  return ToolOutput{std::move(d), std::move(text)};
}

}  // namespace causeway::mcp::tools

CAUSEWAY_TOOL(get_request_latency, causeway::mcp::tools::get_request_latency)
