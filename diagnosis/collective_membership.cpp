#include "diagnosis/collective_membership.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>
#include <utility>

namespace causeway {
namespace collective_membership {

bool overlaps(const CollectiveSpan& a, const CollectiveSpan& b) { return std::max(a.entry_ns, b.entry_ns) <= std::min(a.end_ns, b.end_ns); }

bool same_kind(const CollectiveSpan& a, const CollectiveSpan& b) {
  return a.op == b.op && a.count == b.count && a.datatype == b.datatype;
}

// Two overlapping calls completed together: the first to leave left within the bound of the
// last entry, or both left within it of each other.
bool completed_together(const CollectiveSpan& a, const CollectiveSpan& b) {
  return std::min(a.end_ns, b.end_ns) - std::max(a.entry_ns, b.entry_ns) <= kMembershipTogetherNs ||
         std::llabs(a.end_ns - b.end_ns) <= kMembershipTogetherNs;
}

// The calls of s made while [lo, hi] was traced on both streams.
std::span<const CollectiveSpan> within(std::span<const CollectiveSpan> s, int64_t lo, int64_t hi) {
  auto first = std::find_if(s.begin(), s.end(), [lo](const CollectiveSpan& c) { return c.end_ns >= lo; });
  auto last = std::find_if(first, s.end(), [hi](const CollectiveSpan& c) { return c.entry_ns > hi; });
  return {first, last};
}

const CollectiveSpan* with_seq(std::span<const CollectiveSpan> s, int64_t seq) {
  auto it = std::lower_bound(s.begin(), s.end(), seq, [](const CollectiveSpan& c, int64_t v) { return c.seq < v; });
  return it != s.end() && it->seq == seq ? &*it : nullptr;
}

// Shifts worth trying: those that put one of a's first calls on a call of b it overlaps.
std::set<int64_t> candidate_shifts(std::span<const CollectiveSpan> a, std::span<const CollectiveSpan> b) {
  constexpr size_t kProbes = 8;
  std::set<int64_t> shifts;
  for (size_t i = 0; i < std::min(a.size(), kProbes); ++i) {
    // b is in entry order: its calls that entered before a[i] returned, the latest first.
    auto after = std::upper_bound(b.begin(), b.end(), a[i].end_ns,
                                  [](int64_t t, const CollectiveSpan& c) { return t < c.entry_ns; });
    for (auto it = after; it != b.begin();) {
      --it;
      if (it->end_ns < a[i].entry_ns) break;
      if (same_kind(a[i], *it)) shifts.insert(it->seq - a[i].seq);
    }
  }
  return shifts;
}

}  // namespace collective_membership

StreamPairing pair_streams(std::span<const CollectiveSpan> a_all, std::span<const CollectiveSpan> b_all) {
  using namespace collective_membership;
  StreamPairing best;
  if (a_all.empty() || b_all.empty()) return best;
  const int64_t lo = std::max(a_all.front().entry_ns, b_all.front().entry_ns);
  const int64_t hi = std::min(a_all.back().end_ns, b_all.back().end_ns);
  if (hi <= lo) return best;
  const auto a = within(a_all, lo, hi), b = within(b_all, lo, hi);
  if (a.size() < kMembershipMinCalls || b.size() < kMembershipMinCalls) return best;
  best.calls_a = a.size();
  best.calls_b = b.size();
  for (int64_t shift : candidate_shifts(a, b)) {
    size_t overlapped = 0, together = 0;
    for (const CollectiveSpan& x : a) {
      const CollectiveSpan* y = with_seq(b, x.seq + shift);
      if (!y || !same_kind(x, *y) || !overlaps(x, *y)) continue;
      ++overlapped;
      together += completed_together(x, *y) ? 1 : 0;
    }
    if (overlapped > best.overlapped) best.seq_shift = shift, best.overlapped = overlapped, best.completed_together = together;
  }
  // As many calls on both (by the kernel's sequence numbers, which count lost records too).
  const int64_t span_a = a.back().seq - a.front().seq + 1, span_b = b.back().seq - b.front().seq + 1;
  const bool same_count = std::llabs(span_a - span_b) <= 2 + std::max(span_a, span_b) / 100;
  const double more = static_cast<double>(std::max(a.size(), b.size()));
  best.paired = same_count && best.overlapped >= kMembershipMinCalls &&
                static_cast<double>(best.overlapped) >= kMembershipMinOverlap * more &&
                static_cast<double>(best.completed_together) >= kMembershipMinTogether * static_cast<double>(best.overlapped);
  return best;
}

std::vector<FoundCommunicator> communicators_from_collectives(std::span<const CollectiveSpan> calls) {
  using StreamId = std::pair<uint32_t, int64_t>;  // (pid, handle)
  std::map<StreamId, std::vector<CollectiveSpan>> streams;
  for (const CollectiveSpan& c : calls) streams[{c.pid, c.handle}].push_back(c);
  std::vector<StreamId> ids;
  for (auto& [id, s] : streams) {
    std::sort(s.begin(), s.end(), [](const CollectiveSpan& x, const CollectiveSpan& y) { return x.seq < y.seq; });
    ids.push_back(id);
  }
  // Edges between streams of different processes, then each connected set from its first
  // stream, whose sequence is the communicator's (shifts add along the edges).
  std::vector<std::vector<std::pair<size_t, int64_t>>> edges(ids.size());  // (other, other's shift from this)
  for (size_t i = 0; i < ids.size(); ++i)
    for (size_t j = i + 1; j < ids.size(); ++j) {
      if (ids[i].first == ids[j].first) continue;
      const StreamPairing p = pair_streams(streams[ids[i]], streams[ids[j]]);
      if (!p.paired) continue;
      // j's seq s + shift is i's seq s: a call's communicator seq from j is its seq - seq_shift.
      edges[i].push_back({j, -p.seq_shift});
      edges[j].push_back({i, p.seq_shift});
    }
  std::vector<FoundCommunicator> out;
  std::vector<bool> seen(ids.size(), false);
  for (size_t start = 0; start < ids.size(); ++start) {
    if (seen[start] || edges[start].empty()) continue;
    FoundCommunicator found;
    std::vector<std::pair<size_t, int64_t>> todo = {{start, 0}};
    seen[start] = true;
    while (!todo.empty()) {
      auto [at, shift] = todo.back();
      todo.pop_back();
      found.members.push_back({ids[at].first, ids[at].second, shift});
      for (auto [next, step] : edges[at])
        if (!seen[next]) seen[next] = true, todo.push_back({next, shift + step});
    }
    std::sort(found.members.begin(), found.members.end(), [](const auto& x, const auto& y) {
      return std::pair(x.pid, x.handle) < std::pair(y.pid, y.handle);
    });
    out.push_back(std::move(found));
  }
  return out;
}

}  // namespace causeway
