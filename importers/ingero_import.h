// `causeway import ingero FILE`: copies an ingero trace file into a new causeway session
// (source kind "import") through the store writer, so stats, explain, export and MCP work on
// it as on live data. The foreign file is validated before the trace DB is opened: a file
// that is not ingero's leaves the DB untouched (not even created).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/result.h"

namespace causeway {

struct ImportSummary {
  int64_t session_id = 0;
  uint64_t events = 0;        // rows read from the file's events table = rows written
  uint64_t processes = 0;
  uint64_t threads = 0;
  uint64_t stacks = 0;
  uint64_t source_chains = 0;  // rows of the file's own causal_chains (its diagnosis, not imported)
  std::map<std::string, uint64_t> per_op;   // "SOURCE/op" as named in the file -> events
  std::vector<std::string> kept_by_name;    // ops with no catalog counterpart, kept as "source/name"
  std::vector<std::string> warnings;        // e.g. pids reused across merged nodes
  int64_t first_ns = 0, last_ns = 0;
  double seconds = 0;                       // wall time of the import (without diagnosis)
};

// Fails with the IngeroSource errors ("import_missing", "import_foreign", "import_open") before
// touching db_path, or with the writer's errors ("db_*").
Result<ImportSummary> import_ingero(const std::string& file, const std::string& db_path);

}  // namespace causeway
