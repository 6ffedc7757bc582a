// causeway trace: live capture of CUDA runtime/driver and NCCL calls plus host context into
// the trace DB. SIGINT/SIGTERM (or --duration) flush everything and exit 0; 1 when the DB could
// not take everything (disk full, I/O error, DB deleted: the loss is reported per op).
#include <unistd.h>

#include <algorithm>
#include <iostream>

#include "cli/command.h"
#include "fleet/fleet_options.h"
#include "fleet/live_ship.h"
#include "common/fs_user.h"
#include "collector/session.h"
#include "common/units.h"

// Its own namespace: the commands share the names setup/reg (and helpers), one per file.
namespace causeway::cli::cmd_trace {

struct TraceArgs {
  std::string db;
  std::string duration;
  std::vector<uint32_t> pids;
  std::vector<std::string> libs;
  bool no_stack = false;
  bool record_all = false;
  bool no_python_frames = false;
  std::string max_db = "0";
  bool quiet = false;
  std::string ring_size;   // hidden: tests shrink the call ring to force overflow
  std::string ready_file;  // hidden: created once probes are attached
  size_t writer_queue = 0; // hidden
  std::string metrics;
  bool no_diagnose = false;
  std::string stall_exit = "30s";  // hidden: tests shorten the wait on a full disk
  std::vector<uint16_t> http_ports;
  std::string tenant_header = "x-tenant";
  bool no_requests = false;
  std::string engine_metrics_interval = "1s";
  fleet::FleetFlags ship;                 // --ship URL: ship to the fleet store while tracing
  std::string ship_interval = "10s";      // hidden: tests ship more often
};

// The loss report: what could not be stored, by op, most first.
void report_loss(const collector::TraceSummary& sum, const std::string& db) {
  const auto& l = sum.loss;
  std::vector<std::pair<uint64_t, std::string>> ops;
  for (const auto& [op, n] : l.by_op) ops.emplace_back(n, op);
  std::sort(ops.rbegin(), ops.rend());
  std::string by_op;
  for (const auto& [n, op] : ops) by_op += (by_op.empty() ? "" : ", ") + op + " " + std::to_string(n);
  std::cerr << "causeway trace: " << sum.dropped_writer << " events could not be stored in " << db << " ("
            << l.fault << ": " << l.error << ")" << (by_op.empty() ? "" : "; by op: " + by_op) << std::endl;
  if (!l.stopped_by_itself.empty()) std::cerr << "causeway trace: stopped by itself: " << l.stopped_by_itself << std::endl;
  if (!l.record_error.empty()) std::cerr << "causeway trace: " << l.record_error << std::endl;
}

// The last ship round, after the trace ended: what the store has now. It has the ship's
// --timeout as a whole, so a store that stalls or trickles cannot hold the trace's exit
// (docs/FLEET.md "Limits and deadlines"). A failure leaves the trace's exit status alone (the
// local DB holds everything) and says how to catch up.
// Returns false when the store did not take the whole session: the trace DB is complete either
// way, but a user (or a script) who asked for --ship must not read success (docs/FLEET.md).
bool report_ship(fleet::LiveShipper& shipper, const std::string& url, std::chrono::milliseconds budget) {
  const std::string catch_up = "run `causeway ship --to " + url + "` to send the rest";
  std::cerr << "causeway trace: the last ship round to " << url << " has " << format_duration_ns(budget.count() * 1'000'000)
            << " (--timeout); what it cannot send stays in the trace DB: " << catch_up << std::endl;
  auto s = shipper.finish(budget);
  const std::string rounds = std::to_string(shipper.rounds_ok()) + " round(s) while tracing, " +
                             std::to_string(shipper.rounds_failed()) + " failed";
  if (s) {
    int64_t total = 0;
    for (const auto& [t, n] : s->rows) total += n;
    std::cerr << "causeway trace: shipped to " << url << ": " << rounds << "; the last sent " << total
              << " new rows; the store holds the whole session" << std::endl;
    return true;
  }
  std::cerr << "causeway trace: error: shipping to " << url << " failed (" << rounds << "): " << s.error().message
            << "; the trace DB is complete and keeps everything: " << catch_up << std::endl;
  return false;
}

// The flags, each into its field of TraceArgs.
void add_trace_flags(CLI::App& app, TraceArgs& args) {
  TraceArgs* a = &args;
  add_db_option(app, a->db);
  app.add_option("--duration", a->duration, "stop after this long (500ms, 30s, 5m, 2h); default: until Ctrl-C");
  app.add_option("--pid", a->pids, "trace only this process and its children (repeatable)");
  app.add_option("--lib", a->libs, "also attach to this libcudart/libcuda/libnccl file (repeatable)");
  app.add_flag("--no-stack", a->no_stack, "do not record user stacks of calls");
  app.add_flag("--record-all", a->record_all,
               "record every call as a row (default: fast kernel launches are counted in the kernel, and only those "
               "that explain something are recorded)");
  app.add_option("--max-db", a->max_db, "prune the oldest raw events to keep the DB under SIZE (500m, 10g; 0 = no cap)")
      ->capture_default_str();
  app.add_flag("--quiet", a->quiet, "no live table");
  app.add_option("--metrics", a->metrics, "serve Prometheus metrics at http://HOST:PORT/metrics (e.g. 127.0.0.1:9464)");
  app.add_option("--http-port", a->http_ports, "also trace HTTP requests served on this TCP port (repeatable)");
  app.add_option("--tenant-header", a->tenant_header, "request header naming the tenant (default x-tenant)");
  app.add_flag("--no-requests", a->no_requests, "do not trace HTTP requests of serving processes");
  app.add_option("--engine-metrics-interval", a->engine_metrics_interval,
                 "sample each serving process's Prometheus /metrics this often (default 1s; 0 = never)")
      ->capture_default_str();
  app.add_flag("--no-diagnose", a->no_diagnose, "do not run the correlator (live and at the end)");
  fleet::add_fleet_flags(app, a->ship, "--ship",
                         "also ship the DB to this ClickHouse fleet store while tracing, and once more at the end "
                         "(as `causeway ship --to URL`; a cut link never stalls tracing)");
  app.add_option("--ship-interval", a->ship_interval, "time between ship rounds (default 10s)")->group("");
  app.add_option("--ring-size", a->ring_size, "call ring buffer size (power of two)")->group("");
  app.add_option("--ready-file", a->ready_file, "create this file once probes are attached")->group("");
  app.add_option("--writer-queue", a->writer_queue, "writer queue capacity (records)")->group("");
  app.add_flag("--no-python-frames", a->no_python_frames, "native stacks only (bench/python_stack_cost.sh)")->group("");
  app.add_option("--stall-exit", a->stall_exit, "stop after this long with nothing stored (full disk)")->group("");
  app.footer(
      "Finds libcudart, libcuda and libnccl in every running process (and in processes that start or\n"
      "dlopen them later), probes them, and records calls with durations and decoded arguments,\n"
      "context switches, wake-ups, block I/O, TCP retransmits, page allocation and OOM kills.\n\n"
      "Examples:\n"
      "  sudo causeway trace --duration 30s            everything CUDA/NCCL on this host for 30 s\n"
      "  sudo causeway trace --pid 4821 --no-stack     one job (and its children), no stacks\n"
      "  sudo causeway trace --lib ./venv/lib/python3.12/site-packages/nvidia/cuda_runtime/lib/libcudart.so.12\n"
      "  sudo causeway trace --max-db 2g --quiet > /dev/null &   long-running capture with a size cap\n"
      "  sudo causeway trace --metrics 127.0.0.1:9464   and scrape it from Prometheus\n"
      "  sudo causeway trace --http-port 8000           and the HTTP requests served on port 8000 (then: causeway requests)\n\n"
      "HTTP/1.1 requests (TTFT, inter-token gaps, E2E) are traced on the sockets of processes that listen on TCP in the\n"
      "traced process tree, and of any process listening on an --http-port port (docs/INFERENCE.md).");
}

// The options run_trace() runs with, from the flags; a usage error names the flag.
Result<collector::TraceOptions> trace_options(const TraceArgs& a) {
  collector::TraceOptions o;
  o.db = a.db;
  o.pids = a.pids;
  o.libs = a.libs;
  o.stacks = !a.no_stack;
  o.record_all = a.record_all;
  o.python_frames = !a.no_python_frames;
  o.ready_file = a.ready_file;
  o.writer_queue = a.writer_queue;
  o.label = "trace";
  o.detach_after_return = true;
  o.metrics_addr = a.metrics;
  o.diagnose = !a.no_diagnose;
  o.requests = !a.no_requests;
  o.http_ports = a.http_ports;
  o.tenant_header = a.tenant_header;
  if (a.no_requests && !a.http_ports.empty())
    return make_error("usage", "--http-port traces HTTP requests, which --no-requests turns off: give one or the other");
  if (o.tenant_header.empty() || o.tenant_header.find_first_of(" :\r\n") != std::string::npos)
    return make_error("usage", "--tenant-header: a header name, e.g. x-tenant");
  auto every = parse_duration_ns(a.engine_metrics_interval);
  if (a.engine_metrics_interval == "0") every = int64_t{0};
  if (!every || (*every != 0 && *every < 100'000'000))
    return make_error("usage", "--engine-metrics-interval: a duration of at least 100ms (e.g. 1s), or 0");
  o.engine_metrics_interval_ns = *every;
  if (!a.duration.empty()) {
    auto d = parse_duration_ns(a.duration);
    if (!d) return make_error("usage", "--duration: " + d.error().message);
    o.duration_ns = *d;
  }
  auto stall = parse_duration_ns(a.stall_exit);
  if (!stall) return make_error("usage", "--stall-exit: " + stall.error().message);
  o.stall_exit_ns = *stall;
  auto m = parse_size_bytes(a.max_db);
  if (!m) return make_error("usage", "--max-db: " + m.error().message);
  o.max_db_bytes = *m;
  if (!a.ring_size.empty()) {
    auto r = parse_size_bytes(a.ring_size);
    if (!r || *r < 4096 || (*r & (*r - 1)))
      return make_error("usage", "--ring-size must be a power of two ≥ 4k");
    o.ring_calls_bytes = static_cast<uint32_t>(*r);
  }
  o.live_table = !a.quiet && ::isatty(STDERR_FILENO);
  o.verbose = !a.quiet;
  return o;
}

// --ship URL: the shipper that ships while tracing, and the last round's budget (--timeout).
Result<void> start_shipper(const TraceArgs& a, std::optional<fleet::LiveShipper>& shipper,
                           std::chrono::milliseconds& ship_budget) {
  if (!a.ship.url.empty()) {
    auto e = a.ship.endpoint();
    if (!e) return e.error();
    ship_budget = e->call_timeout;
    auto every = parse_duration_ns(a.ship_interval);
    if (!every || *every < 100'000'000)
      return make_error("usage", "--ship-interval: a duration of at least 100ms (e.g. 10s)");
    shipper.emplace(*e, a.db, *every);
  }
  return {};
}

Runner setup(CLI::App& app) {
  auto a = std::make_shared<TraceArgs>();
  add_trace_flags(app, *a);
  return [a]() -> int {
    auto options = trace_options(*a);
    if (!options) return report_error("trace", options.error(), false);
    const collector::TraceOptions& o = *options;
    auto as = write_identity_for(a->db);
    if (!as) return report_error("trace", as.error(), false);
    std::cerr << "causeway trace: writing " << a->db << (*as ? " (owned by " + (*as)->name + ")" : "") << std::endl;
    std::optional<fleet::LiveShipper> shipper;
    std::chrono::milliseconds ship_budget{0};
    if (auto r = start_shipper(*a, shipper, ship_budget); !r) return report_error("trace", r.error(), false);
    install_stop_handlers();
    auto sum = collector::run_trace(o, [] { return stop_requested(); });
    if (!sum) return report_error("trace", sum.error(), false);
    std::cerr << "causeway trace: session " << sum->session_id << ": " << sum->calls << " calls, " << sum->switches
              << " context switches, " << sum->wakeups << " wake-ups, " << sum->host_events << " host events from "
              << sum->processes << " processes in " << format_duration_ns(sum->elapsed_ns) << "; dropped ring "
              << sum->dropped_ring << ", writer " << sum->dropped_writer << "; " << sum->chains << " causal chains, " << sum->requests << " HTTP requests → "
              << a->db << std::endl;
    for (const auto& w : sum->warnings) std::cerr << "causeway trace: warning: " << w << std::endl;
    const bool shipped = !shipper || report_ship(*shipper, a->ship.url, ship_budget);
    if (sum->loss.failed) {
      report_loss(*sum, a->db);
      return kExitFailure;
    }
    return shipped ? kExitOk : kExitFailure;
  };
}

const Registrar reg{{"trace", "live capture of CUDA/NCCL calls and host context (root)", 20, setup}};

}  // namespace causeway::cli::cmd_trace
