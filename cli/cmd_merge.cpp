#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "diagnosis/correlator.h"
#include "cli/command.h"
#include "common/sanitize.h"
#include "cli/json_out.h"
#include "diagnosis/request_chains.h"
#include "tracedb/merge.h"

// Its own namespace: the commands share the names setup/reg (and helpers), one per file.
namespace causeway::cli::cmd_merge {

struct MergeArgs {
  std::string out;
  std::vector<std::string> inputs;
  bool json = false;
  bool quiet = false;
};

// Notes name the inputs' hosts, which come from the input DBs (possibly hostile).
std::vector<std::string> sanitized(const std::vector<std::string>& notes) {
  std::vector<std::string> out;
  for (const std::string& n : notes) out.push_back(sanitize_untrusted(n, 400));
  return out;
}

nlohmann::json summary_json(const MergeSummary& s, const std::string& out, size_t chains) {
  nlohmann::json inputs = nlohmann::json::array();
  for (const MergeInputSummary& i : s.inputs)
    inputs.push_back({{"path", i.path}, {"sha256", i.sha256}, {"host", sanitize_untrusted(i.host, 128)}, {"session_id", i.source_session_id},
                      {"schema_version", i.schema_version}, {"events", i.events}, {"pid_base", i.pid_base},
                      {"clock_offset_ns", i.clock_offset_ns}, {"started_ns", i.started_ns}});
  return {{"db", out}, {"session_id", s.session_id}, {"events", s.events}, {"inputs", inputs},
          {"assumed_skew_ns", 0}, {"notes", sanitized(s.notes)}, {"chains", chains}};
}

Runner setup(CLI::App& app) {
  auto a = std::make_shared<MergeArgs>();
  app.add_option("-o,--output", a->out, "the merged DB to create (must not exist)")->required();
  app.add_option("inputs", a->inputs, "trace DBs of the hosts (read-only; never modified)")->required()->expected(1, -1);
  app.add_flag("--json", a->json, "one JSON document on stdout");
  app.add_flag("--quiet,-q", a->quiet, "print nothing on success");
  app.footer(
      "Combines the latest session of each input into one session of a new DB: pids, threads\n"
      "and CPUs of host k are shifted by k*10000000 / k*10000 so they never collide, and the\n"
      "merged_hosts table says which host each came from. Then the correlator runs over the\n"
      "whole job, so a rank that is late on another host is named with its host.\n"
      "See docs/FLEET.md.\n\n"
      "Examples:\n"
      "  causeway merge -o job.db node1.db node2.db\n"
      "  causeway explain --db job.db");
  return [a] {
    auto s = merge_trace_dbs(a->out, a->inputs);
    if (!s) return report_error("merge", s.error(), a->json);
    auto d = diagnose_and_store(a->out, s->session_id);
    if (d) {
      // The hosts' requests were carried over: their chains are the merged session's too.
      auto rq = requests::store_request_chains(a->out, s->session_id);
      if (rq) *d += *rq;
      else d = rq.error();
    }
    if (!d) {
      Error e = d.error();
      e.message = a->out + " was written, but its diagnosis failed: " + e.message;
      return report_error("merge", e, a->json);
    }
    if (a->json) {
      print_json(summary_json(*s, a->out, *d));
    } else if (!a->quiet) {
      std::fprintf(stderr, "merged %zu hosts into %s: session %lld, %lld events, %zu chain(s)\n", s->inputs.size(),
                   a->out.c_str(), static_cast<long long>(s->session_id), static_cast<long long>(s->events), *d);
      for (const MergeInputSummary& i : s->inputs)
        std::fprintf(stderr, "  host %-20s %10lld events  pids +%lld  realtime-monotonic %lld ns  (%s)\n",
                     sanitize_untrusted(i.host, 128).c_str(),
                     static_cast<long long>(i.events), static_cast<long long>(i.pid_base),
                     static_cast<long long>(i.clock_offset_ns), i.path.c_str());
      for (const std::string& n : sanitized(s->notes)) std::fprintf(stderr, "  note: %s\n", n.c_str());
      std::fprintf(stderr, "run: causeway explain --db %s\n", a->out.c_str());
    }
    return kExitOk;
  };
}

const Registrar reg{{"merge", "combine several hosts' trace DBs into one (inputs are never modified)", 78, setup}};

}  // namespace causeway::cli::cmd_merge
