#include "collector/call_agg.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <algorithm>

namespace causeway::collector {

CallAggReader::CallAggReader(CallAggMaps maps) : maps_(maps), ncpu_(std::max(1, libbpf_num_possible_cpus())) {
  buf_.resize(static_cast<size_t>(ncpu_));
}

void CallAggReader::add_key(int fd, const void* key, uint64_t k, std::map<uint64_t, CallAggTotals>& now) {
  if (bpf_map_lookup_elem(fd, key, buf_.data()) != 0) return;
  add_percpu(now[k], buf_);
}

std::vector<AggregatedCallsRecord> CallAggReader::read() {
  // Every (process, op) as both maps have it now: an array entry through its index, then the hash.
  std::map<uint64_t, CallAggTotals> now;
  cw_agg_key key{}, next{};
  const cw_agg_key* prev = nullptr;
  while (maps_.index_fd >= 0 && bpf_map_get_next_key(maps_.index_fd, prev, &next) == 0) {
    key = next;
    prev = &key;
    uint32_t idx = 0;
    if (bpf_map_lookup_elem(maps_.index_fd, &key, &idx) == 0)
      add_key(maps_.slots_fd, &idx, uint64_t{key.pid} << 16 | key.op, now);
  }
  prev = nullptr;
  while (bpf_map_get_next_key(maps_.hash_fd, prev, &next) == 0) {
    key = next;
    prev = &key;
    add_key(maps_.hash_fd, &key, uint64_t{key.pid} << 16 | key.op, now);
  }
  std::vector<AggregatedCallsRecord> out;
  for (auto& [k, totals] : now) {
    const auto pid = static_cast<uint32_t>(k >> 16);
    const auto op = static_cast<uint16_t>(k & 0xffff);
    auto it = last_.find(k);
    AggregatedCallsRecord r = aggregate_delta(totals, it == last_.end() ? nullptr : &it->second, pid, op);
    if (r.count) {
      counted_ += r.count;
      out.push_back(std::move(r));
    }
    last_[k] = std::move(totals);
  }
  return out;
}

}  // namespace causeway::collector
