// The one place a chain becomes text: the chain's JSON document (docs/INTERFACES.md shape plus
// where/lost_us/impact/window) and the chains table's columns (tracedb/chain_store.h), both
// from the typed chain after every annotation, at either level: a call chain (diagnosis/chain_view.h
// Doc) or a request chain (diagnosis/request_chain_view.h RequestChainDoc). The culprit is written
// by culprit_json() alone, wherever a chain is written (the fleet's chains too).
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>

#include "diagnosis/chain_view.h"
#include "diagnosis/culprit.h"
#include "diagnosis/request_chain_view.h"
#include "tracedb/records.h"

namespace causeway {

// `cause` is the JSON spelling of d.cause (the registry's cause_name, causes/registry.h).
ChainRecord chain_record(const Doc& d, std::string_view cause);

// A request-level chain's row and document (`cause`: the request registry's name of its cause,
// diagnosis/causes/request_registry.h). The document has no calls / p50_us / p99_us: those are
// the row's columns, and a reader would take "calls" for CUDA calls.
ChainRecord chain_record(const RequestChainDoc& d, std::string_view cause);

// A culprit's JSON object (each field's key: diagnosis/culprit.h), keys in name order.
nlohmann::json culprit_json(const Culprit& c);

}  // namespace causeway
