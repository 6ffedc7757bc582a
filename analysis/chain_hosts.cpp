#include "analysis/chain_hosts.h"

#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "analysis/system_info.h"
#include "analysis/tenants.h"
#include "common/sanitize.h"

namespace causeway {
namespace {

using json = nlohmann::json;

void replace_first(std::string& text, const std::string& from, const std::string& to) {
  if (auto i = text.find(from); i != std::string::npos) text.replace(i, from.size(), to);
}

void annotate_straggler(json& doc, ChainRecord& c, const HostOfPid& hosts, const CorrelatorState& s) {
  json& cul = doc["culprit"];
  const uint32_t pid = cul.value("pid", 0u);
  const std::string src = s.ranks.source(pid);
  cul["rank_source"] = src.empty() ? "init" : src;
  doc["evidence"].push_back(src.empty() ? "rank " + std::to_string(cul.value("rank", -1)) + " from its traced ncclCommInitRank"
                                        : "rank " + std::to_string(cul.value("rank", -1)) + " from " + src +
                                              " in its environment (its ncclCommInitRank ran before the trace began); "
                                              "collectives matched by the n-th call on each rank's communicator");
  if (!hosts.merged()) return;
  const std::string late_host = hosts.host(pid);
  std::map<std::string, std::vector<int64_t>> waiting;  // host -> pids
  if (doc.contains("victims"))
    for (json& v : doc["victims"]) {
      const int64_t vp = v.value("pid", int64_t{0});
      v["host"] = hosts.host(vp);
      v["host_pid"] = hosts.host_pid(vp);
      waiting[hosts.host(vp)].push_back(vp);
    }
  json wh = json::array();
  std::string list;
  bool other_host = false;
  for (auto& [h, pids] : waiting) {
    wh.push_back({{"host", h}, {"pids", pids}});
    list += (list.empty() ? "" : "; ") + h + ": " + std::to_string(pids.size()) + " rank(s)";
    other_host = other_host || h != late_host;
  }
  cul["waiting_hosts"] = wh;
  const std::string pid_text = "(pid " + std::to_string(pid) + ")";
  const std::string named = "(pid " + std::to_string(pid) + " = pid " + std::to_string(hosts.host_pid(pid)) + " on host " +
                            late_host + ")";
  replace_first(c.summary, pid_text, named);
  if (other_host) c.summary = "cross-host straggler: " + c.summary;
  doc["summary"] = c.summary;
  doc["evidence"].push_back("late rank on host " + late_host + "; waiting ranks on " + list +
                            " (host timelines lined up by CLOCK_REALTIME; see merged_hosts)");
}

// The culprit's tenant (analysis/tenants.h); the summary names its cgroup when it is not the
// victim's own ("tar (pid 991) in /system.slice/backup.service").
void annotate_tenant(json& doc, ChainRecord& c, const Tenants& tenants) {
  json& cul = doc["culprit"];
  const auto pid = cul.value("pid", uint32_t{0});
  const Tenant t = tenants.of(pid);
  const std::string cgroup = sanitize_untrusted(t.cgroup, 256);
  cul["cgroup"] = cgroup;
  cul["container"] = t.container ? json(sanitize_untrusted(*t.container, 128)) : json(nullptr);
  if (t.pod) cul["pod"] = sanitize_untrusted(*t.pod, 128);
  if (cgroup.empty() || cgroup == "/" || !c.pid || pid == *c.pid || tenants.of(*c.pid).cgroup == t.cgroup) return;
  replace_first(c.summary, "(pid " + std::to_string(pid) + ")",
                "(pid " + std::to_string(pid) + ") in " + cgroup +
                    (t.container ? " (container " + sanitize_untrusted(*t.container, 128) + ")" : std::string()));
  doc["summary"] = c.summary;
}

}  // namespace

Result<void> annotate_hosts_and_ranks(std::vector<ChainRecord>& chains, sqlite3* db, const CorrelatorState& s) {
  auto hosts = HostOfPid::load(db, s.session_id);
  if (!hosts) return hosts.error();
  auto tenants = Tenants::load(db, s.session_id);
  if (!tenants) return tenants.error();
  for (ChainRecord& c : chains) {
    json doc = json::parse(c.doc, nullptr, false);
    if (!doc.is_object()) continue;
    if (c.pid && hosts->merged()) {
      doc["host"] = hosts->host(*c.pid);
      doc["host_pid"] = hosts->host_pid(*c.pid);
    }
    if (doc.contains("culprit") && doc["culprit"].is_object() && doc["culprit"].contains("pid")) {
      const int64_t pid = doc["culprit"].value("pid", int64_t{0});
      doc["culprit"]["host"] = hosts->host(pid);
      if (hosts->merged()) doc["culprit"]["host_pid"] = hosts->host_pid(pid);
      if (c.cause == "nccl_straggler") annotate_straggler(doc, c, *hosts, s);
      annotate_tenant(doc, c, *tenants);
    }
    c.doc = doc.dump();
  }
  return {};
}

}  // namespace causeway
