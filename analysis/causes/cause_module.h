// What every per-call cause module provides (analysis/causes/<cause>.{h,cpp}, docs/DIAGNOSIS.md
// "Adding a cause"): an id, its JSON name, a typed Evidence struct its detector fills, and the
// two renderers that turn one accumulated chain into words: explain() (summary, culprit,
// evidence lines) and fix() (the recommendation). A module missing any of them fails the
// CauseModule concept, which the registry checks at compile time.
#pragma once

#include <concepts>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/cause.h"
#include "analysis/culprit.h"

namespace causeway {

struct ChainView;  // one accumulated chain, read-only, with the words shared by every cause (chain_view.h)

enum class Severity : uint8_t { low = 1, medium = 2, high = 3 };

// The JSON spelling of a severity (docs/INTERFACES.md `severity`).
constexpr std::string_view severity_name(Severity s) {
  return s == Severity::high ? "HIGH" : s == Severity::medium ? "MEDIUM" : "LOW";
}

struct Finding {
  std::string summary;
  std::optional<Culprit> culprit;  // none when the data names none
  std::vector<std::string> evidence;
  std::optional<uint16_t> op;              // the op the chain is reported under, when not its calls' op
  std::optional<Severity> max_severity;    // a cause that is never HIGH (a one-time cost, weak evidence)
  bool report_below_min_impact = false;    // kept even when it lost under min_impact of the window
  bool calls_line = true;                  // lead the evidence with "N of M <op> calls slow"
  double min_impact = 0.001;               // dropped (unless kept above) when it lost less
};

template <typename M>
concept CauseModule = requires(const ChainView& v, const typename M::Evidence& e) {
  requires std::same_as<std::remove_cv_t<decltype(M::id)>, Cause>;
  requires std::convertible_to<decltype(M::name), std::string_view>;
  requires std::default_initializable<typename M::Evidence>;
  { M::explain(v, e) } -> std::same_as<Finding>;
  { M::fix(v, e) } -> std::same_as<std::string>;
};

// Causes found over the whole session from their own accumulators (not per slow call):
// nccl_straggler, transfer_bound, allocator, … They emit() typed chains (chain_view.h) themselves.
struct SessionReport;
template <typename M>
concept SessionCauseModule = requires(SessionReport& r) {
  requires std::same_as<std::remove_cv_t<decltype(M::id)>, Cause>;
  requires std::convertible_to<decltype(M::name), std::string_view>;
  { M::report(r) } -> std::same_as<void>;
};

}  // namespace causeway
