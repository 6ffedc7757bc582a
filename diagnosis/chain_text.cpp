#include "diagnosis/chain_text.h"

#include <cstdio>
#include <utility>

#include "common/sanitize.h"

namespace causeway {

std::string percent_text(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.0f%%", v * 100.0);
  return b;
}

std::string long_request_text(const nlohmann::json& l) {
  if (!l.is_object() || !l.contains("id") || !l["id"].is_string()) return "";
  std::string s = sanitize_untrusted(l["id"].get<std::string>(), 64);
  // The culprit carries one size: tokens when the server said, else the body's bytes.
  const bool tokens = l.contains("prompt_tokens") && l["prompt_tokens"].is_number();
  const char* key = tokens ? "prompt_tokens" : "prompt_bytes";
  if (l.contains(key) && l[key].is_number())
    s += " (" + std::to_string(l[key].get<int64_t>()) + (tokens ? " prompt tokens" : " prompt bytes") +
         (l.contains("tenant") && l["tenant"].is_string() ? ", tenant " + sanitize_untrusted(l["tenant"].get<std::string>(), 48) : "") +
         ")";
  return s;
}

namespace {

// prefill_interference's culprit is the long requests themselves: named first, with their
// prompt sizes and tenants (ids and tenants are the clients': untrusted).
std::string long_requests_text(const nlohmann::json& longs) {
  std::string s = "long request" + std::string(longs.size() == 1 ? " " : "s ");
  size_t shown = 0;
  for (const auto& l : longs) {
    if (!l.is_object() || !l.contains("id") || !l["id"].is_string() || shown++ >= 5) continue;
    s += (shown > 1 ? ", " : "") + long_request_text(l);
  }
  if (longs.size() > 5) s += ", … " + std::to_string(longs.size() - 5) + " more";
  return s + "; prefilled by ";
}

}  // namespace

bool is_request_chain(const nlohmann::json& chain) {
  return chain.is_object() && chain.contains("level") && chain["level"] == "request";
}

std::string culprit_line(const nlohmann::json& c, bool request_level) {
  if (!c.is_object()) return "";
  std::string s;
  if (c.contains("long_requests") && c["long_requests"].is_array() && !c["long_requests"].empty())
    s = long_requests_text(c["long_requests"]);
  if (c.contains("peer") && c["peer"].is_string()) s += "peer " + sanitize_untrusted(c["peer"].get<std::string>(), 80);
  else if (c.contains("comm") && c["comm"].is_string()) s += sanitize_untrusted(c["comm"].get<std::string>(), 64);
  if (c.contains("pid") && c["pid"].is_number()) s += " (pid " + std::to_string(c["pid"].get<int64_t>());
  if (c.contains("tid") && c["tid"].is_number()) s += ", tid " + std::to_string(c["tid"].get<int64_t>());
  if (c.contains("rank") && c["rank"].is_number()) s += ", rank " + std::to_string(c["rank"].get<int64_t>());
  if (c.contains("pid") && c["pid"].is_number()) s += ")";
  const std::pair<const char*, const char*> shares[] = {
      {"off_cpu_share", "of the stolen CPU time"}, {"wait_share", "of the blocked time"},
      {"overlap_share", "of the slow calls overlapped"}, {"page_share", "of the pages allocated"},
      {"late_share", "of the collectives entered last"},
      {"share", request_level ? "of the time the cause claimed" : "of the slow calls"}};
  for (auto& [k, what] : shares)
    if (c.contains(k) && c[k].is_number()) {
      s += ", " + percent_text(c[k].get<double>()) + " " + what;
      break;
    }
  if (c.contains("doing") && c["doing"].is_string() && c.contains("doing_share") && c["doing_share"].is_number() &&
      c["doing_share"].get<double>() > 0)
    s += "; it spent " + percent_text(c["doing_share"].get<double>()) + " of its time producing the batches " +
         (c["doing"] == "block_io" ? std::string("in disk reads")
          : c["doing"] == "cpu"    ? std::string("on-CPU")
          : c["doing"] == "runnable" ? std::string("waiting for a CPU")
                                     : std::string("asleep itself"));
  if (c.contains("cgroup") && c["cgroup"].is_string() && !c["cgroup"].get<std::string>().empty() && c["cgroup"] != "/")
    s += "; cgroup " + sanitize_untrusted(c["cgroup"].get<std::string>(), 200);
  if (c.contains("container") && c["container"].is_string()) s += ", container " + sanitize_untrusted(c["container"].get<std::string>(), 80);
  if (c.contains("pod") && c["pod"].is_string()) s += ", pod " + sanitize_untrusted(c["pod"].get<std::string>(), 120);
  if (c.contains("tracer_overhead_ms") && c["tracer_overhead_ms"].is_number())
    s += "; tracer overhead: " + std::to_string(static_cast<int64_t>(c["tracer_overhead_ms"].get<double>() + 0.5)) +
         " ms on the same CPUs (never a culprit)";
  if (c.contains("preempted_by") && c["preempted_by"].is_object()) {
    const nlohmann::json& p = c["preempted_by"];
    s += "; itself preempted by " + (p.contains("comm") && p["comm"].is_string() ? sanitize_untrusted(p["comm"].get<std::string>(), 64) : std::string()) +
         (p.contains("pid") && p["pid"].is_number() ? " (pid " + std::to_string(p["pid"].get<int64_t>()) + ")" : "");
  }
  return s;
}

}  // namespace causeway
