#include "metrics/registry.h"

#include <algorithm>

#include "common/sanitize.h"

namespace causeway {

namespace {
size_t bucket_of(int64_t dur_ns) {
  // The first bound >= the value: "le" is inclusive. In integer ns, exact on every bound.
  auto it = std::lower_bound(kLatencyBucketsNs.begin(), kLatencyBucketsNs.end(), dur_ns);
  return static_cast<size_t>(it - kLatencyBucketsNs.begin());
}
}  // namespace

struct MetricsRegistry::AtomicSeries {
  std::atomic<uint64_t> calls{0}, errors{0}, sum_ns{0}, over{0};
  std::array<std::atomic<uint64_t>, kLatencyBucketsSeconds.size()> buckets{};
};

MetricsRegistry::MetricsRegistry() : by_id_(new std::atomic<AtomicSeries*>[65536]) {
  for (size_t i = 0; i < 65536; ++i) by_id_[i].store(nullptr, std::memory_order_relaxed);
}

MetricsRegistry::~MetricsRegistry() {
  for (size_t i = 0; i < 65536; ++i) delete by_id_[i].load(std::memory_order_relaxed);
}

void MetricsRegistry::name_op(uint16_t op_id, const std::string& source, const std::string& op) {
  std::lock_guard lock(mu_);
  names_[op_id] = {source, op};
}

MetricsRegistry::AtomicSeries* MetricsRegistry::series_of(uint16_t op_id) {
  AtomicSeries* s = by_id_[op_id].load(std::memory_order_acquire);
  if (!s) {
    auto* fresh = new AtomicSeries();
    if (by_id_[op_id].compare_exchange_strong(s, fresh, std::memory_order_acq_rel)) s = fresh;
    else delete fresh;  // another thread installed one first; s now points to it
  }
  return s;
}

void MetricsRegistry::observe(uint16_t op_id, int64_t dur_ns, bool error) {
  AtomicSeries* s = series_of(op_id);
  s->calls.fetch_add(1, std::memory_order_relaxed);
  if (error) s->errors.fetch_add(1, std::memory_order_relaxed);
  s->sum_ns.fetch_add(static_cast<uint64_t>(std::max<int64_t>(0, dur_ns)), std::memory_order_relaxed);
  const size_t idx = bucket_of(dur_ns);
  if (idx < s->buckets.size()) s->buckets[idx].fetch_add(1, std::memory_order_relaxed);
  else s->over.fetch_add(1, std::memory_order_relaxed);
}

void MetricsRegistry::observe_counted(uint16_t op_id, const std::vector<std::pair<int64_t, uint64_t>>& dur_counts,
                                      uint64_t count, uint64_t sum_ns, uint64_t errors) {
  AtomicSeries* s = series_of(op_id);
  s->calls.fetch_add(count, std::memory_order_relaxed);
  s->errors.fetch_add(errors, std::memory_order_relaxed);
  s->sum_ns.fetch_add(sum_ns, std::memory_order_relaxed);
  for (const auto& [dur_ns, n] : dur_counts) {
    const size_t idx = bucket_of(dur_ns);
    if (idx < s->buckets.size()) s->buckets[idx].fetch_add(n, std::memory_order_relaxed);
    else s->over.fetch_add(n, std::memory_order_relaxed);
  }
}

void MetricsRegistry::observe_call(const std::string& source, const std::string& op, int64_t dur_ns, bool error) {
  const uint64_t ns = static_cast<uint64_t>(std::max<int64_t>(0, dur_ns));
  const size_t idx = bucket_of(dur_ns);
  std::lock_guard lock(mu_);
  OpSeries& s = s_.ops[{source, op}];
  ++s.calls;
  if (error) ++s.errors;
  s.sum_ns += ns;
  if (idx < s.buckets.size()) ++s.buckets[idx];
  else ++s.over;
}

void MetricsRegistry::set_drops(const std::string& reason, uint64_t n) {
  std::lock_guard lock(mu_);
  s_.drops[reason] = n;
}

void MetricsRegistry::set_writer_lost(const std::string& source, const std::string& op, uint64_t n) {
  std::lock_guard lock(mu_);
  s_.writer_lost[{source, op}] = n;
}

void MetricsRegistry::set_writer_failing(const std::string& fault, bool failing) {
  std::lock_guard lock(mu_);
  s_.writer_failing[fault] = failing ? 1 : 0;
}

void MetricsRegistry::set_host(const std::string& host, const std::string& boot_id) {
  std::lock_guard lock(mu_);
  s_.host = sanitize_untrusted(host, 255);  // HOST_NAME_MAX is 64; a cap, not a cut
  s_.boot_id = sanitize_untrusted(boot_id, 64);
}

void MetricsRegistry::set_chains(const std::string& cause, uint64_t n) {
  std::lock_guard lock(mu_);
  s_.chains[cause] = n;
}

MetricsSnapshot MetricsRegistry::snapshot() const {
  std::lock_guard lock(mu_);
  MetricsSnapshot out = s_;
  for (size_t id = 0; id < 65536; ++id) {
    const AtomicSeries* a = by_id_[id].load(std::memory_order_acquire);
    if (!a) continue;
    auto n = names_.find(static_cast<uint16_t>(id));
    std::pair<std::string, std::string> key =
        n != names_.end() ? n->second : std::make_pair(std::string("unknown"), "op" + std::to_string(id));
    OpSeries& o = out.ops[key];  // merges with observe_call's series of the same name
    o.calls += a->calls.load(std::memory_order_relaxed);
    o.errors += a->errors.load(std::memory_order_relaxed);
    o.sum_ns += a->sum_ns.load(std::memory_order_relaxed);
    o.over += a->over.load(std::memory_order_relaxed);
    for (size_t b = 0; b < o.buckets.size(); ++b) o.buckets[b] += a->buckets[b].load(std::memory_order_relaxed);
  }
  out.requests = requests_.snapshot();
  return out;
}

void MetricsRegistry::count_scrape() {
  std::lock_guard lock(mu_);
  ++s_.scrapes;
}

}  // namespace causeway
