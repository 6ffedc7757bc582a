#include <signal.h>

#include <iostream>

#include "cli/command.h"
#include "collector/check.h"
#include "fleet/endpoint.h"
#include "fleet/fleet_options.h"
#include "mcp/fleet_tools.h"
#include "mcp/protocol.h"
#include "mcp/transport_stdio.h"
#include "mcp/transport_https.h"

// Its own namespace: the commands share the names setup/reg (and helpers), one per file.
namespace causeway::cli::cmd_mcp {

// The flags, each bound to the field of the options the server runs with.
struct McpArgs {
  mcp::ServerConfig config;  // --db, --connections, --demo-dir
  mcp::HttpsOptions https;   // --http HOST:PORT and the HTTPS flags
  fleet::FleetFlags fleet;
  bool allow_broad_reader = false;
};

Runner setup(CLI::App& app) {
  auto a = std::make_shared<McpArgs>();
  add_db_option(app, a->config.db_path);
  CLI::Option* http = app.add_option("--http", a->https.listen, "serve Streamable HTTP over TLS 1.3 at https://HOST:PORT/mcp instead of stdio");
  app.add_option("--tls-cert", a->https.tls_cert, "PEM certificate (default: one signed by a local CA made on first start in --state-dir; clients trust mcp-ca.pem)");
  app.add_option("--tls-key", a->https.tls_key, "PEM private key for --tls-cert");
  app.add_option("--token-file", a->https.token_file,
                 "file of bearer tokens clients must send, one per line, one per user (default: $CAUSEWAY_MCP_TOKEN, else a random one printed to stderr)");
  app.add_option("--allow-origin", a->https.allowed_origins, "comma-separated Origins allowed besides localhost ones");
  app.add_option("--audit-log", a->https.audit_log, "append one line per HTTP request here (default: stderr)");
  app.add_option("--state-dir", a->https.state_dir, "where the generated CA and certificate live (default: $XDG_STATE_HOME/causeway)");
  app.add_option("--demo-dir", a->config.scratch_dir, "scratch folder for run_demo's separate DB (default: a private temp folder)");
  app.add_option("--rate", a->https.rate_per_minute, "requests per minute per client (one bearer token from one address) before 429")->capture_default_str();
  app.add_option("--max-body", a->https.max_body_bytes, "largest request body in bytes (413 beyond)")->capture_default_str();
  app.add_option("--connections", a->config.db_connections, "read-only DB connections shared by concurrent requests")->capture_default_str();
  fleet::add_fleet_flags(app, a->fleet, "--fleet",
                         "serve the ClickHouse fleet store at this URL (every shipped host, as a read-only user) instead of --db");
  app.add_flag("--allow-broad-reader", a->allow_broad_reader,
               "with --fleet: start even when the user can read other databases or write (run_sql would reach them)");
  app.footer(
      "Serves the trace DB read-only to MCP clients (Claude Code, Cursor, ollmcp).\n"
      "Examples:\n"
      "  causeway mcp                                   stdio, for a client that starts the server\n"
      "  claude mcp add causeway -- causeway mcp --db trace.db\n"
      "  CAUSEWAY_MCP_TOKEN=... causeway mcp --http 127.0.0.1:8443\n"
      "  causeway mcp --http 0.0.0.0:8443 --tls-cert cert.pem --tls-key key.pem --token-file token\n"
      "  causeway mcp --fleet http://ch:8123 --user causeway_reader --password-file reader.pw");
  return [a, http] {
    install_stop_handlers();
    signal(SIGPIPE, SIG_IGN);  // a client that hangs up must not kill the server
    mcp::ServerConfig config = a->config;
    // get_check runs the collector's checks in this process (mcp itself never links libbpf).
    config.host_check = [](const std::string& db) { return nlohmann::json(collector::checks_to_json(collector::run_checks(db))); };
    mcp::ToolRegistry tools = mcp::builtin_tools();
    if (!a->fleet.url.empty()) {
      // The same tools and schemas, answered from the fleet store (docs/MCP.md "Fleet mode").
      auto e = a->fleet.endpoint();
      if (!e) return report_error("mcp", e.error(), false);
      // run_sql hands the login to every token holder and to the model: it must reach the fleet
      // database only, read-only (docs/FLEET.md "What a reader can see").
      if (!a->allow_broad_reader) {
        auto reach = fleet::probe_reader_reach(*e);
        if (!reach) {
          Error err = reach.error();
          err.message = "cannot check what " + e->user + " can reach on the fleet store: " + err.message;
          return report_error("mcp", err, false);
        }
        if (reach->broad())
          return report_error(
              "mcp",
              make_error("fleet_reader_too_broad",
                         reach->describe(*e) + "; through run_sql every MCP token holder, and the model, would reach that too. "
                         "Serve the fleet as a reader limited to " + e->database + " with a readonly=1 profile "
                         "(examples/clickhouse/users.xml: allow_databases, profile causeway_reader), or pass "
                         "--allow-broad-reader to accept this."),
              false);
      }
      config.fleet = true;
      config.db_path.clear();
      mcp::serve_from_fleet(tools, *e);
    }
    mcp::Server server(config, std::move(tools));
    server.set_log([](const std::string& line) { std::cerr << "causeway mcp: " << line << std::endl; });
    // No --http (or an empty one): stdio.
    if (http->count() == 0 || a->https.listen.empty())
      return mcp::serve_stdio(server, stop_requested) == 0 ? kExitOk : kExitFailure;
    auto r = mcp::serve_https(server, a->https, stop_requested);
    if (!r) return report_error("mcp", r.error(), false);
    return kExitOk;
  };
}

const Registrar reg{{"mcp", "serve the trace DB to MCP clients (stdio or HTTPS)", 60, setup}};

}  // namespace causeway::cli::cmd_mcp
