// A request-level chain in memory (docs/INFERENCE.md "Request chains"): typed from the tail of
// a metric (diagnosis/request_latency.h RequestTail) by diagnosis/request_chains.cpp, until the
// one chain serializer (diagnosis/chain_json.h chain_record) writes it as the chains
// table's row and its JSON document.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "diagnosis/causes/cause_module.h"
#include "diagnosis/culprit.h"

namespace causeway {

struct RequestChainDoc {
  std::string id;  // "s<session>-req-<server pid>-<metric>-<cause>"
  Severity severity = Severity::low;
  std::string metric;  // "ttft" | "itl"
  std::string op;      // "TTFT" | "ITL (token gaps)"
  uint32_t pid = 0;    // the server whose tail it is
  std::string comm;
  int64_t from_ns = 0, to_ns = 0;  // the span of the units the cause claimed
  uint64_t requests = 0;           // requests slowed (the row's `calls`)
  std::vector<std::string> request_ids;
  double share_time = 0;  // of the tail's time above the median
  double impact = 0;      // seconds lost
  double p50_us = 0, p99_us = 0;  // the metric's median and the tail's threshold
  Culprit culprit;  // the cause's culprit (docs/INTERFACES.md "Inference requests"), with its comm
  std::string summary;
  std::vector<std::string> evidence;
  std::string recommendation;
};

}  // namespace causeway
