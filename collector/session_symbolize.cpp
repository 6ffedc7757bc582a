// Session's stacks: a call's native and Python frames located while the process runs, the
// text resolved later off the drain thread (collector/stack_resolver.h).
#include "collector/session_internal.h"

namespace causeway::collector {

uint64_t Session::stack_for(uint32_t pid, int32_t stack_id, uint64_t py_key) {
  auto key = std::make_tuple(pid, stack_id, py_key);
  if (auto it = stack_cache_.find(key); it != stack_cache_.end()) return it->second;
  std::vector<uint64_t> ips = stack_id >= 0 ? bpf_.stack(stack_id) : std::vector<uint64_t>{};
  std::optional<cw_py_stack> py;
  auto layout = py_layouts_.find(pid);
  if (py_key && layout != py_layouts_.end()) py = bpf_.py_stack(py_key);
  if (ips.empty() && !py) {
    ++stack_read_failures_;  // not cached: the next call with this id tries again
    return 0;
  }
  // Locate now (the maps are the process's as it runs); the text comes later, off this thread.
  // Python frames are read from the live process now too (cached per code object): a short
  // script may be gone by the time the resolver gets to them.
  std::vector<FrameLoc> locs = symbolizer_.locate(pid, ips);
  if (py)
    for (uint32_t i = 0; i < py->depth; ++i) {
      FrameLoc loc;
      loc.kind = FrameLoc::Kind::python;
      if (auto f = py_reader_.frame(pid, layout->second, py->code[i], py->instr[i])) loc.py = std::move(*f);
      else loc.py = PyFrame{"<unreadable>", "?", 0};
      locs.push_back(std::move(loc));
    }
  const uint64_t hash = stack_hash(locs);
  if (submitted_stacks_.insert(hash).second) resolver_.submit(hash, std::move(locs));
  stack_cache_[key] = hash;
  return hash;
}

}  // namespace causeway::collector
