#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "common/units.h"
#include "exporters/perfetto_export.h"

// Its own namespace: the commands share the names setup/reg (and helpers), one per file.
namespace causeway::cli::cmd_export {

// The flags: those of the export itself bound to the options it runs with.
struct ExportArgs {
  std::string format;
  ExportOptions o;  // --db, -o, --pid, --session (and --since, parsed into it)
  std::string since;
  bool quiet = false;
};

Runner setup(CLI::App& app) {
  auto a = std::make_shared<ExportArgs>();
  app.add_option("--format", a->format, "output format: perfetto (Chrome Trace Event JSON)")
      ->required()
      ->check(CLI::IsMember({"perfetto"}));
  add_db_option(app, a->o.db_path);
  app.add_option("-o,--output", a->o.out_path, "output file ('-' = stdout)")->required();
  app.add_option("--since", a->since, "only the last D of the session's data (500ms, 30s, 5m, 2h)");
  app.add_option("--pid", a->o.pid, "only this process (plus the culprits of its chains)");
  app.add_option("--session", a->o.session_id, "session id (default: the latest)");
  app.add_flag("--quiet,-q", a->quiet, "print nothing on success");
  app.footer(
      "Open the file in ui.perfetto.dev (Open trace file) or chrome://tracing. See docs/EXPORT.md.\n\n"
      "Examples:\n"
      "  causeway export --format perfetto -o trace.json\n"
      "  causeway export --format perfetto --since 30s --pid 4821 -o last30s.json\n"
      "  causeway export --format perfetto --db /tmp/empty-cache.db -o empty-cache.json");
  return [a] {
    ExportOptions o = a->o;
    if (!a->since.empty()) {
      auto d = parse_duration_ns(a->since);
      if (!d) return report_error("export", d.error(), false);
      o.since_ns = *d;
    }
    auto s = export_perfetto(o);
    if (!s) return report_error("export", s.error(), false);
    if (!a->quiet)
      std::fprintf(stderr,
                   "exported session %lld to %s: %llu trace events (%llu call slices, %llu off-CPU slices, %llu I/O, "
                   "%llu instants, %llu chains, %llu flows, %llu collectives), %s in %.2fs\n",
                   static_cast<long long>(s->session_id), o.out_path.c_str(), static_cast<unsigned long long>(s->trace_events),
                   static_cast<unsigned long long>(s->call_slices), static_cast<unsigned long long>(s->off_cpu_slices),
                   static_cast<unsigned long long>(s->async_slices), static_cast<unsigned long long>(s->instants),
                   static_cast<unsigned long long>(s->chains), static_cast<unsigned long long>(s->flows),
                   static_cast<unsigned long long>(s->collectives), format_bytes(static_cast<int64_t>(s->bytes)).c_str(),
                   s->seconds);
    return kExitOk;
  };
}

const Registrar reg{{"export", "write a session as a Perfetto / Chrome trace (JSON)", 76, setup}};

}  // namespace causeway::cli::cmd_export
