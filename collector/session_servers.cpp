// Session's serving processes: HTTP listeners of the traced set, their process trees, and
// the scraper of their /metrics (docs/INFERENCE.md "Which processes").
#include "collector/session_internal.h"

#include <signal.h>
#include <unistd.h>
#include <algorithm>
#include <cerrno>

#include "collector/clock.h"
#include "collector/discovery.h"
#include "collector/proc_info.h"
#include "collector/servers.h"
#include "collector/sock_hook.h"

namespace causeway::collector {

// A serving process is traced like a CUDA process (sched, wake-ups, block I/O, page faults,
// TCP: the kernel side's `traced` map), with its descendants already running (an engine core,
// workers; later forks follow in the kernel), each recorded in `processes` whether or not it
// calls CUDA (docs/INFERENCE.md "Which processes").
void Session::trace_serving_tree(uint32_t server) {
  std::set<uint32_t> tree = descendants_of({server}, list_pids());
  tree.insert(server);
  const int64_t now = monotonic_ns() + offset_;
  for (uint32_t p : tree) {
    if (!o_.pids.empty()) allowed_.insert(p);
    bpf_.trace_pid(p);
    ensure_process(p, now);
  }
}

void Session::find_servers_now() {
  if (!o_.requests) return;
  // The traced processes and the --pid tree (a server that makes no CUDA call is found by
  // --pid alone: its tree is the traced set).
  std::set<uint32_t> traced(allowed_.begin(), allowed_.end());
  for (const auto& [pid, k] : known_)
    if (pid_allowed(pid)) traced.insert(pid);
  joined_.clear();
  tree_.clear();
  tree_.add(traced);
  std::set<uint32_t> candidates = tree_.pids();
  // Elsewhere only listeners on a --http-port port: every process's sockets.
  if (!o_.http_ports.empty())
    for (uint32_t pid : list_pids()) candidates.insert(pid);
  discovery_.listener_checks += candidates.size();
  take_servers(listeners_of(candidates, [&](uint32_t pid) { return tree_.has(pid); }, o_.http_ports,
                            static_cast<uint32_t>(::getpid())));
}

// Between slow rescans the sockets read are those of the processes that joined the trace
// (with their session ancestors new to the tree: an API server above a newly traced engine
// core, listening since before) and of those the kernel saw begin listening (bpf/net.bpf.h
// CW_REC_LISTEN) that are in the tree or listen on a --http-port port.
void Session::check_new_listeners(int64_t now) {
  if (!o_.requests) return;
  std::set<uint32_t> candidates;
  if (!joined_.empty()) {
    candidates = tree_.add(std::set<uint32_t>(joined_.begin(), joined_.end()));
    joined_.clear();
  }
  std::erase_if(pending_listens_, [&](const auto& p) {
    if (p.first > now) return false;
    candidates.insert(p.second);
    return true;
  });
  if (candidates.empty()) return;
  discovery_.listener_checks += candidates.size();
  take_servers(listeners_of(candidates, [&](uint32_t pid) { return tree_.holds(pid); }, o_.http_ports,
                            static_cast<uint32_t>(::getpid())));
}

void Session::on_listen(const cw_listen_event& e) {
  ++discovery_.listen_events;
  if (!o_.requests) return;
  const uint32_t pid = e.hdr.pid;
  // Port 0: listen() binds it after the event; a --http-port port may be the one it gets.
  const bool declared = std::find(o_.http_ports.begin(), o_.http_ports.end(), e.port) != o_.http_ports.end() ||
                        (e.port == 0 && !o_.http_ports.empty());
  // A process that joined this round is in joined_, not yet in the tree: its sockets are
  // read with the others that joined.
  if (!declared && !tree_.has(pid)) return;
  // The socket is hashed (in /proc/PID/net/tcp) just after the state change: looked at a
  // moment later, with the next round's other listens.
  pending_listens_.push_back({monotonic_ns() + 20'000'000, pid});
}

void Session::take_servers(const std::vector<Server>& found) {
  // causeway itself is never among them (listeners_of leaves out self), and every path of the
  // capture (accept, reads and writes: sock_pids; arrival times: the listen ports; the
  // scraper) starts here.
  for (const Server& srv : found) {
    // Every port it listens on: a connection accepted before the trace is taken at its first
    // read or write when its local port is one of them (bpf/sock.bpf.h sock_listen).
    if (listen_ports_.insert({srv.netns, srv.port}).second) bpf_.add_listen_port(static_cast<uint32_t>(srv.netns), srv.port);
    // Scraped only once it is known to speak HTTP: a --http-port port (the user said so), or
    // one a user's request was parsed on (store_requests). A listener of the tree that never
    // served HTTP (NCCL's bootstrap, a raw TCP receiver) is never connected to.
    const ListenerKey key{srv.pid, srv.port};
    const bool declared = std::find(o_.http_ports.begin(), o_.http_ports.end(), srv.port) != o_.http_ports.end();
    if (declared || http_listeners_.count(key)) scrape_listener(srv.pid, srv.listen);
    else unproven_listeners_.emplace(key, srv.listen);
    if (servers_.count(srv.pid)) continue;
    auto hook = bpf_.trace_server(srv.pid);
    if (!hook) {
      sum_.warnings.push_back("HTTP requests of pid " + std::to_string(srv.pid) + " not traced: " + hook.error().message);
      say(sum_.warnings.back());
      servers_.insert(srv.pid);  // once: the next scan finds it again
      continue;
    }
    // The fallback costs every process on the host (docs/BENCHMARKS.md): the user is told.
    if (*hook == SockHook::raw && !raw_warned_) {
      raw_warned_ = true;
      sum_.warnings.push_back(std::string("HTTP requests traced through the ") + sock_hook_name(SockHook::raw) + ": " +
                              bpf_.sock_why_raw());
    }
    if (!hook_told_) {
      hook_told_ = true;
      if (auto c = bpf_.sock_choice(); c && !c->why.empty()) say("request hook: " + c->why);
    }
    servers_.insert(srv.pid);
    trace_serving_tree(srv.pid);
    say("tracing HTTP requests of pid " + std::to_string(srv.pid) + " (listening on port " + std::to_string(srv.port) +
        ") through the " + sock_hook_name(*hook));
    // TLS plaintext through the libssl it maps (docs/INFERENCE.md "TLS").
    if (auto tls = bpf_.trace_server_tls(srv.pid); !tls) {
      sum_.warnings.push_back("TLS of pid " + std::to_string(srv.pid) + " not read: " + tls.error().message);
      say(sum_.warnings.back());
    } else if (tls->reach != TlsReach::none) {
      say("pid " + std::to_string(srv.pid) + ": " + tls->text);
    }
  }
}

// Servers gone: their libc probes detach, their pid leaves the filter (a reused pid is a
// new process, found again if it serves). Once a second: a kill(pid, 0) each.
void Session::forget_gone_servers() {
  for (auto it = servers_.begin(); it != servers_.end();) {
    if (::kill(static_cast<pid_t>(*it), 0) == 0 || errno != ESRCH) {
      ++it;
      continue;
    }
    bpf_.untrace_server(*it);
    it = servers_.erase(it);
  }
}

void Session::scrape_listener(uint32_t pid, const Endpoint& at) {
  if (o_.engine_metrics_interval_ns <= 0) return;
  if (!scraper_) {
    OwnConnections own;
    own.open = [this](const cw_sock_conn& k) { bpf_.add_own_conn(k); };
    own.close = [this](const cw_sock_conn& k) {
      if (bpf_.remove_own_conn(k)) own_unaccepted_.fetch_add(1, std::memory_order_relaxed);
    };
    scraper_ = std::make_unique<EngineScraper>(o_.engine_metrics_interval_ns, std::move(own));
  }
  scraper_->add(pid, at);
}

}  // namespace causeway::collector
