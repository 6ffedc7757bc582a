// A trace that ends hands the detach of its uprobes to a grandchild (bpf_loader.cpp: the
// kernel serializes each detach behind an RCU grace period, seconds for a few dozen probes).
// Attaching the same probes while that detach is still in flight has left the new trace's
// probes dead: a trace started 6 s after the previous one exited recorded 48 of ~60,000 calls.
// The detaching grandchild holds a shared flock on one well-known file until its last close;
// a trace about to attach waits until it can take it exclusively (bounded), so a detach and an
// attach never overlap.
#pragma once

#include <chrono>

namespace causeway::collector {

// An fd holding the lock, shared (the grandchild inherits it: a flock belongs to the open file,
// so it holds until every copy is closed), or -1 when the lock file cannot be used (not root:
// /run is not writable; then nothing waits either).
int lock_for_detach();

// Waits until no detach holds the lock, at most `timeout`; returns how long it waited.
std::chrono::milliseconds wait_for_detaches(std::chrono::milliseconds timeout);

}  // namespace causeway::collector
