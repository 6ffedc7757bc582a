// "Which entry is the biggest": the element of a range (a map's key/value pairs, a vector's
// rows) with the largest score among those a filter keeps. Ties go to the first in iteration
// order, as the hand-written `if (x > best) best = x` loops this replaces did, so a rewritten
// caller picks the same entry.
#pragma once

#include <iterator>

namespace causeway {

struct KeepEvery {
  template <typename T>
  constexpr bool operator()(const T&) const {
    return true;
  }
};

// A pointer to the element of `range` with the largest `score(element)` among those
// `keep(element)` accepts (the first of equals), or nullptr when it accepts none.
template <typename Range, typename Score, typename Keep = KeepEvery>
auto argmax_by(const Range& range, Score score, Keep keep = {}) -> decltype(&*std::begin(range)) {
  decltype(&*std::begin(range)) best = nullptr;
  for (const auto& x : range) {
    if (!keep(x)) continue;
    if (!best || score(*best) < score(x)) best = &x;
  }
  return best;
}

// The key of the map entry with the largest value (the first of equals), or `none` when the
// map is empty or `keep(entry)` accepts none: "which thread / CPU / op got the most".
template <typename Map, typename Keep = KeepEvery>
auto key_of_largest(const Map& m, typename Map::key_type none = {}, Keep keep = {}) -> typename Map::key_type {
  const auto* top = argmax_by(m, [](const auto& entry) { return entry.second; }, keep);
  return top ? top->first : none;
}

}  // namespace causeway
