#include "diagnosis/collectives.h"

#include <algorithm>
#include <numeric>

namespace causeway {

void mark_step_starts(std::span<CollectiveEntry> e) {
  std::vector<size_t> idx(e.size());
  std::iota(idx.begin(), idx.end(), size_t{0});
  std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) {
    if (e[a].tid != e[b].tid) return e[a].tid < e[b].tid;
    return e[a].ts_ns < e[b].ts_ns;
  });
  for (size_t k = 0; k < idx.size(); ++k) {
    CollectiveEntry& cur = e[idx[k]];
    cur.step_from_ns = 0;
    if (k == 0) continue;
    const CollectiveEntry& prev = e[idx[k - 1]];
    if (prev.tid == cur.tid && prev.end_ns <= cur.ts_ns) cur.step_from_ns = prev.end_ns;
  }
}

int64_t late_for_cpu_window_from(const CollectiveEntry& late, int64_t lateness_ns) {
  return std::max(late.ts_ns - 2 * lateness_ns, late.step_from_ns);
}

std::vector<CollectiveGroup> group_collectives(std::span<const CollectiveEntry> e, int64_t min_gap_ns) {
  std::vector<size_t> idx(e.size());
  std::iota(idx.begin(), idx.end(), size_t{0});
  std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) {
    if (e[a].comm != e[b].comm) return e[a].comm < e[b].comm;
    if (e[a].seq != e[b].seq) return e[a].seq < e[b].seq;
    return e[a].ts_ns < e[b].ts_ns;
  });
  std::vector<CollectiveGroup> groups;
  for (size_t i = 0; i < idx.size();) {
    size_t j = i;
    while (j < idx.size() && e[idx[j]].comm == e[idx[i]].comm && e[idx[j]].seq == e[idx[i]].seq) ++j;
    CollectiveGroup g;
    g.comm = e[idx[i]].comm;
    g.seq = e[idx[i]].seq;
    g.op = e[idx[i]].op;
    g.members.assign(idx.begin() + static_cast<std::ptrdiff_t>(i), idx.begin() + static_cast<std::ptrdiff_t>(j));
    g.first_entry_ns = e[g.members.front()].ts_ns;
    g.last_entry_ns = e[g.members.back()].ts_ns;
    if (g.members.size() >= 2) {
      int64_t second_last = e[g.members[g.members.size() - 2]].ts_ns;
      for (size_t k = 0; k + 1 < g.members.size(); ++k) g.wait_ns += g.last_entry_ns - e[g.members[k]].ts_ns;
      g.lateness_ns = g.last_entry_ns - second_last;
      if (g.lateness_ns >= min_gap_ns) {
        g.has_straggler = true;
        g.straggler = g.members.back();
      }
    }
    groups.push_back(std::move(g));
    i = j;
  }
  return groups;
}

}  // namespace causeway
