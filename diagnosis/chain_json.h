// The one place a chain becomes text: the chain's JSON document (docs/INTERFACES.md shape plus
// where/lost_us/impact/window) and the chains table's columns (tracedb/chain_store.h), both
// from the typed chain (diagnosis/chain_view.h Doc) after every annotation.
#pragma once

#include <string_view>

#include "diagnosis/chain_view.h"
#include "diagnosis/request_chain_view.h"
#include "tracedb/records.h"

namespace causeway {

// `cause` is the JSON spelling of d.cause (the registry's cause_name, causes/registry.h).
ChainRecord chain_record(const Doc& d, std::string_view cause);

// A request-level chain's row and document (`cause`: the request registry's name of its cause,
// diagnosis/causes/request_registry.h). The document has no calls / p50_us / p99_us: those are
// the row's columns, and a reader would take "calls" for CUDA calls.
ChainRecord request_chain_record(const RequestChainDoc& d, std::string_view cause);

}  // namespace causeway
