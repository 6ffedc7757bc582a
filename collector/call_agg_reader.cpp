#include "collector/call_agg.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <algorithm>

namespace causeway::collector {

CallAggReader::CallAggReader(int map_fd) : fd_(map_fd), ncpu_(std::max(1, libbpf_num_possible_cpus())) {
  buf_.resize(static_cast<size_t>(ncpu_));
}

std::vector<AggregatedCallsRecord> CallAggReader::read() {
  std::vector<AggregatedCallsRecord> out;
  cw_agg_key key{}, next{};
  const cw_agg_key* prev = nullptr;
  while (bpf_map_get_next_key(fd_, prev, &next) == 0) {
    key = next;
    prev = &key;
    if (bpf_map_lookup_elem(fd_, &key, buf_.data()) != 0) continue;
    CallAggTotals now = merge_percpu(buf_);
    const uint64_t k = uint64_t{key.pid} << 16 | key.op;
    auto it = last_.find(k);
    AggregatedCallsRecord r = aggregate_delta(now, it == last_.end() ? nullptr : &it->second, key.pid, key.op);
    if (r.count) {
      counted_ += r.count;
      out.push_back(std::move(r));
    }
    last_[k] = std::move(now);
  }
  return out;
}

}  // namespace causeway::collector
