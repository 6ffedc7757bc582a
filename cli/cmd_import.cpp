#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "diagnosis/correlator.h"
#include "cli/command.h"
#include "cli/json_out.h"
#include "importers/ingero_import.h"

// Its own namespace: the commands share the names setup/reg (and helpers), one per file.
namespace causeway::cli::cmd_import {

struct ImportArgs {
  std::string format;
  std::string file;
  std::string db;
  bool json = false;
  bool quiet = false;
  bool no_diagnose = false;
};

nlohmann::json summary_json(const ImportSummary& s, const std::string& file, const std::string& db, int64_t chains) {
  nlohmann::json per_op = nlohmann::json::object();
  for (const auto& [k, n] : s.per_op) per_op[k] = n;
  return {{"session_id", s.session_id}, {"file", file}, {"db", db}, {"events", s.events},
          {"processes", s.processes}, {"threads", s.threads}, {"stacks", s.stacks},
          {"per_op", per_op}, {"kept_by_name", s.kept_by_name}, {"warnings", s.warnings},
          {"source_chains", s.source_chains}, {"chains", chains}, {"first_ns", s.first_ns},
          {"last_ns", s.last_ns}, {"import_seconds", s.seconds}};
}

void print_text(const ImportSummary& s, const std::string& file, const std::string& db, int64_t chains) {
  double rate = s.seconds > 0 ? static_cast<double>(s.events) / s.seconds : 0;
  std::fprintf(stderr, "imported %s into %s: session %lld, %llu events (%.0f events/s), %llu processes, %llu threads, %llu stacks\n",
               file.c_str(), db.c_str(), static_cast<long long>(s.session_id), static_cast<unsigned long long>(s.events),
               rate, static_cast<unsigned long long>(s.processes), static_cast<unsigned long long>(s.threads),
               static_cast<unsigned long long>(s.stacks));
  for (const auto& [k, n] : s.per_op) std::fprintf(stderr, "  %-28s %10llu\n", k.c_str(), static_cast<unsigned long long>(n));
  for (const auto& k : s.kept_by_name) std::fprintf(stderr, "  kept by name (no catalog op): %s\n", k.c_str());
  for (const auto& w : s.warnings) std::fprintf(stderr, "  warning: %s\n", w.c_str());
  if (chains >= 0)
    std::fprintf(stderr, "diagnosed: %lld chain(s) (the file's own diagnosis had %llu); run: causeway explain --db %s\n",
                 static_cast<long long>(chains), static_cast<unsigned long long>(s.source_chains), db.c_str());
}

Runner setup(CLI::App& app) {
  auto a = std::make_shared<ImportArgs>();
  app.add_option("format", a->format, "trace format: ingero")->required()->check(CLI::IsMember({"ingero"}));
  app.add_option("file", a->file, "the trace file to import (read-only; never modified)")->required();
  add_db_option(app, a->db);
  app.add_flag("--json", a->json, "one JSON document on stdout");
  app.add_flag("--quiet,-q", a->quiet, "print nothing on success");
  app.add_flag("--no-diagnose", a->no_diagnose, "write the session only; skip the correlator");
  app.footer(
      "Writes the file as a new session (source kind 'import'), then runs the correlator over it.\n"
      "Unknown ops are kept by name; a file that is not an ingero trace is refused and the DB\n"
      "is left untouched. See docs/IMPORT.md for the mapping.\n\n"
      "Examples:\n"
      "  causeway import ingero pytorch-173382-empty-cache.db --db /tmp/empty-cache.db\n"
      "  causeway explain --db /tmp/empty-cache.db\n"
      "  causeway import ingero node.db --json");
  return [a] {
    auto s = import_ingero(a->file, a->db);
    if (!s) return report_error("import", s.error(), a->json);
    int64_t chains = -1;
    if (!a->no_diagnose) {
      auto d = diagnose_and_store(a->db, s->session_id);
      if (!d) {
        Error e = d.error();
        e.message = "session " + std::to_string(s->session_id) + " was imported, but its diagnosis failed: " + e.message;
        return report_error("import", e, a->json);
      }
      chains = static_cast<int64_t>(*d);
    }
    if (a->json) print_json(summary_json(*s, a->file, a->db, chains));
    else if (!a->quiet) print_text(*s, a->file, a->db, chains);
    return kExitOk;
  };
}

const Registrar reg{{"import", "import another tool's trace file (ingero) as a session", 75, setup}};

}  // namespace causeway::cli::cmd_import
