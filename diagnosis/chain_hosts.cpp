#include "diagnosis/chain_hosts.h"

#include <map>
#include <string>

#include "diagnosis/system_info.h"
#include "diagnosis/tenants.h"
#include "common/sanitize.h"

namespace causeway {
namespace {

void replace_first(std::string& text, const std::string& from, const std::string& to) {
  if (auto i = text.find(from); i != std::string::npos) text.replace(i, from.size(), to);
}

void annotate_straggler(Doc& d, Culprit& cul, const HostOfPid& hosts, const CorrelatorState& s) {
  const uint32_t pid = *cul.pid;
  const std::string src = s.ranks.source(pid);
  const std::string rank = s.ranks.label(pid, static_cast<int32_t>(cul.rank.value_or(-1)));
  cul.rank_source = src.empty() ? "init" : src;
  constexpr const char* matched = " (its ncclCommInitRank ran before the trace began); collectives matched by the n-th "
                                  "call on each rank's communicator";
  if (src.empty()) d.evidence.push_back(rank + " from its traced ncclCommInitRank");
  else if (src == kTitleRank) d.evidence.push_back(rank + ": the tensor-parallel rank in its engine's process title" + matched);
  else if (src == kStructuralRank)
    d.evidence.push_back(rank + " among its parent's workers of the same name: no rank was reported (no traced init, "
                                "launcher variable or engine title)" + std::string(matched));
  else if (src == kTimingRank)
    d.evidence.push_back(rank + " of a communicator found from its collectives (same op, count and datatype overlapping "
                                "and completing together call after call); rank numbers unknown: no traced init, launcher variable, "
                                "engine title or same-name siblings said them" + std::string(matched));
  else d.evidence.push_back(rank + " from " + src + " in its environment" + matched);
  if (!src.empty() && !rank_number_known(src)) cul.rank.reset();  // a place in pid order, not a rank
  if (!hosts.merged()) return;
  const std::string late_host = hosts.host(pid);
  std::map<std::string, std::vector<int64_t>> waiting;  // host -> pids
  if (d.victims)
    for (StragglerVictim& v : *d.victims) {
      v.host = hosts.host(v.pid);
      v.host_pid = hosts.host_pid(v.pid);
      waiting[*v.host].push_back(v.pid);
    }
  std::vector<WaitingHost> wh;
  std::string list;
  bool other_host = false;
  for (auto& [h, pids] : waiting) {
    wh.push_back({h, pids});
    list += (list.empty() ? "" : "; ") + h + ": " + std::to_string(pids.size()) + " rank(s)";
    other_host = other_host || h != late_host;
  }
  cul.waiting_hosts = std::move(wh);
  const std::string pid_text = "(pid " + std::to_string(pid) + ")";
  const std::string named = "(pid " + std::to_string(pid) + " = pid " + std::to_string(hosts.host_pid(pid)) + " on host " +
                            late_host + ")";
  replace_first(d.summary, pid_text, named);
  if (other_host) d.summary = "cross-host straggler: " + d.summary;
  d.evidence.push_back("late rank on host " + late_host + "; waiting ranks on " + list +
                       " (host timelines lined up by CLOCK_REALTIME; see merged_hosts)");
}

// The culprit's tenant (diagnosis/tenants.h); the summary names its cgroup when it is not the
// victim's own ("tar (pid 991) in /system.slice/backup.service").
void annotate_tenant(Doc& d, Culprit& cul, const Tenants& tenants) {
  const uint32_t pid = *cul.pid;
  const Tenant t = tenants.of(pid);
  const std::string cgroup = sanitize_untrusted(t.cgroup, 256);
  CulpritTenant& ct = cul.tenant.emplace();
  ct.cgroup = cgroup;
  if (t.container) ct.container = sanitize_untrusted(*t.container, 128);
  if (t.pod) ct.pod = sanitize_untrusted(*t.pod, 128);
  if (cgroup.empty() || cgroup == "/" || pid == d.pid || tenants.of(d.pid).cgroup == t.cgroup) return;
  replace_first(d.summary, "(pid " + std::to_string(pid) + ")",
                "(pid " + std::to_string(pid) + ") in " + cgroup + (ct.container ? " (container " + *ct.container + ")" : std::string()));
}

}  // namespace

Result<void> annotate_hosts_and_ranks(std::vector<Doc>& chains, sqlite3* db, const CorrelatorState& s) {
  auto hosts = HostOfPid::load(db, s.session_id);
  if (!hosts) return hosts.error();
  auto tenants = Tenants::load(db, s.session_id);
  if (!tenants) return tenants.error();
  for (Doc& d : chains) {
    if (hosts->merged()) {
      d.host = hosts->host(d.pid);
      d.host_pid = hosts->host_pid(d.pid);
    }
    if (!d.culprit || !d.culprit->pid) continue;  // a network peer is no local process
    Culprit& cul = *d.culprit;
    cul.host = hosts->host(*cul.pid);
    if (hosts->merged()) cul.host_pid = hosts->host_pid(*cul.pid);
    if (d.cause == Cause::nccl_straggler) annotate_straggler(d, cul, *hosts, s);
    annotate_tenant(d, cul, *tenants);
  }
  return {};
}

}  // namespace causeway
