#include "collector/tls_servers.h"

#include <algorithm>
#include <map>
#include <set>

#include "collector/discovery.h"
#include "collector/proc_info.h"
#include "collector/proc_maps.h"
#include "collector/servers.h"
#include "common/sanitize.h"

namespace causeway::collector {

std::vector<TlsServer> tls_servers_on_host(uint32_t self) {
  // find_servers takes listeners in the trees of the pids it is given: all of them here.
  const std::vector<uint32_t> pids = list_pids();
  const std::set<uint32_t> every(pids.begin(), pids.end());
  std::map<uint32_t, TlsServer> by_pid;
  for (const Server& s : find_servers(every, {}, self)) {
    TlsServer& t = by_pid[s.pid];
    t.pid = s.pid;
    if (std::find(t.ports.begin(), t.ports.end(), s.port) == t.ports.end()) t.ports.push_back(s.port);
  }
  std::vector<TlsServer> out;
  for (auto& [pid, t] : by_pid) {
    t.comm = sanitize_untrusted(read_comm(pid), 32);
    t.tls = tls_readability(read_maps(pid), "/proc/" + std::to_string(pid) + "/root");
    out.push_back(std::move(t));
  }
  return out;
}

std::string tls_servers_text(const std::vector<TlsServer>& servers, size_t limit) {
  std::string text;
  size_t shown = 0, without = 0;
  for (const TlsServer& s : servers) {
    if (s.tls.reach == TlsReach::none) {
      ++without;
      continue;
    }
    if (shown++ == limit) continue;
    std::string ports;
    for (uint16_t p : s.ports) ports += (ports.empty() ? ":" : ",:") + std::to_string(p);
    text += (text.empty() ? "" : "; ") + std::string("pid ") + std::to_string(s.pid) + " " + s.comm + " " + ports + ": " +
            (s.tls.reach == TlsReach::libssl ? "readable" : "counted, not read") + " (" + s.tls.text + ")";
  }
  if (shown > limit) text += "; and " + std::to_string(shown - limit) + " more";
  if (text.empty()) text = "no listening server maps a TLS library";
  text += "; " + std::to_string(without) + " listening process" + (without == 1 ? "" : "es") + " without one";
  return text;
}

}  // namespace causeway::collector
