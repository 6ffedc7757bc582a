// Which processes serve HTTP in a traced job (docs/INFERENCE.md "Which processes"): those
// listening on TCP that are traced or an ancestor of a traced process in the same session
// (vLLM's API server is the parent of its engine core), and any process listening on one of
// the --http-port ports. Read from /proc/PID/net/tcp{,6} (the listener's own network
// namespace: a server in a container is found too) and /proc/PID/fd.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "collector/endpoint.h"

namespace causeway::collector {

struct Server {
  uint32_t pid = 0;
  uint16_t port = 0;
  Endpoint listen;     // the address it listens on, in its own network namespace
  uint64_t netns = 0;  // that namespace (inode)
};

// Listening addresses, by socket inode, from /proc/net/tcp or tcp6 text (pure: tested on copies).
std::vector<std::pair<uint64_t, Endpoint>> parse_listeners(const std::string& proc_net_tcp);

// A process's parent, session and start time (clock ticks after boot) from /proc/PID/stat;
// nullopt when it is gone. The start time tells a process from a later one given its pid.
struct ProcLink {
  uint32_t ppid = 0;
  uint32_t sid = 0;
  uint64_t start_ticks = 0;
};
std::optional<ProcLink> read_proc_link(uint32_t pid);

// The processes whose listeners are a traced job's: the traced ones and each one's ancestors
// in its own session (up to 8 levels). Grown as processes join the trace, so that a listen
// the kernel reports (bpf/net.bpf.h CW_REC_LISTEN) is matched without walking every traced
// process's ancestry again (docs/COLLECTOR.md "Discovery and lifecycle").
class ServingTree {
 public:
  // Adds traced processes and their session ancestors; returns those new to the tree (a walk
  // stops at an ancestor already in it: its own ancestors are).
  std::set<uint32_t> add(const std::set<uint32_t>& traced);
  // In the tree, and still the process that was added (same start time): one /proc read.
  bool holds(uint32_t pid) const;
  // In the tree as added (no /proc read: for a tree just built).
  bool has(uint32_t pid) const { return start_.count(pid) != 0; }
  void erase(uint32_t pid) { start_.erase(pid); }
  void clear() { start_.clear(); }
  std::set<uint32_t> pids() const;
  size_t size() const { return start_.size(); }

 private:
  std::unordered_map<uint32_t, uint64_t> start_;  // pid -> start ticks when added
};

// The listening sockets `candidates` hold: any of a process `in_tree` says is the job's,
// only those on a `ports` port for the others. One entry per listening socket (a process
// listening on two ports comes twice). Never returns self.
std::vector<Server> listeners_of(const std::set<uint32_t>& candidates, const std::function<bool(uint32_t)>& in_tree,
                                 const std::vector<uint16_t>& ports, uint32_t self);

// Every listener of the traced job (traced: processes traced now) and every process
// listening on a --http-port port: a scan of the whole host when ports are given.
std::vector<Server> find_servers(const std::set<uint32_t>& traced, const std::vector<uint16_t>& ports, uint32_t self);

}  // namespace causeway::collector
