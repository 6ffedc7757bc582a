// causeway query: run one read-only SQL statement over the trace DB through sqlguard.
#include <unistd.h>

#include <iostream>
#include <iterator>
#include <string>
#include <vector>

#include "cli/command.h"
#include "cli/json_out.h"
#include "common/sanitize.h"
#include "common/units.h"
#include "sqlguard/guard.h"
#include "sqlguard/schema_description.h"
#include "tracedb/stale_read.h"

// Its own namespace: the commands share the names setup/reg (and helpers), one per file.
namespace causeway::cli::cmd_query {

constexpr size_t kCellMaxBytes = 64;  // human table cells; --json output is never cut

struct Options {
  std::string db;
  bool json = false;
  size_t limit = 1000;
  std::string timeout = "5s";
  bool schema = false;
  std::string sql;
};

// Display width in code points (sanitized text holds no control or zero-width characters).
size_t display_width(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

std::string render_cell(const nlohmann::json& v) {
  if (v.is_null()) return "NULL";
  if (v.is_string()) return sanitize_untrusted(v.get<std::string>(), kCellMaxBytes);
  return v.dump();
}

void print_table(const sqlguard::QueryResult& r, size_t limit) {
  const size_t n = r.columns.size();
  std::vector<std::string> header;
  std::vector<size_t> width(n, 0);
  std::vector<bool> numeric(n, true);
  for (size_t i = 0; i < n; ++i) {
    header.push_back(sanitize_untrusted(r.columns[i], kCellMaxBytes));
    width[i] = display_width(header[i]);
  }
  std::vector<std::vector<std::string>> cells;
  for (const auto& row : r.rows) {
    std::vector<std::string> line;
    for (size_t i = 0; i < n && i < row.size(); ++i) {
      line.push_back(render_cell(row[i]));
      width[i] = std::max(width[i], display_width(line.back()));
      if (!row[i].is_number() && !row[i].is_null()) numeric[i] = false;
    }
    cells.push_back(std::move(line));
  }
  auto emit = [&](const std::vector<std::string>& line, bool is_header) {
    std::string out;
    for (size_t i = 0; i < line.size(); ++i) {
      std::string pad(width[i] - display_width(line[i]), ' ');
      bool right = numeric[i] && !is_header;
      out += right ? pad + line[i] : line[i] + (i + 1 < line.size() ? pad : "");
      if (i + 1 < line.size()) out += "  ";
    }
    std::cout << out << "\n";
  };
  emit(header, true);
  std::string rule;
  for (size_t i = 0; i < n; ++i) rule += std::string(width[i], '-') + (i + 1 < n ? "  " : "");
  std::cout << rule << "\n";
  for (const auto& line : cells) emit(line, false);
  char elapsed[32];
  std::snprintf(elapsed, sizeof elapsed, "%.2f", r.elapsed_ms);
  std::cout << "(" << r.rows.size() << (r.rows.size() == 1 ? " row" : " rows") << ", " << elapsed << " ms";
  if (r.truncated)
    std::cout << "; truncated at " << (r.truncated_by == "max_bytes" ? "the result size cap" : "--limit " + std::to_string(limit))
              << ")";
  else
    std::cout << ")";
  std::cout << std::endl;
}

int run(const Options& o) {
  const bool json = o.json;
  if (o.schema) {
    auto conn = sqlguard::GuardedConnection::open(o.db);
    if (!conn) return report_error("query", conn.error(), json);
    auto desc = sqlguard::describe_schema(conn->handle());
    if (!desc) return report_error("query", desc.error(), json);
    if (json) print_json(*desc);
    else std::cout << sqlguard::describe_schema_text(*desc);
    return kExitOk;
  }
  std::string sql = o.sql;
  if (sql.empty() || sql == "-") {
    if (isatty(STDIN_FILENO))
      return report_error("query", make_error("usage", "no SQL given: pass it as an argument (after --) or on stdin"),
                          json);
    sql.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  }
  auto timeout = parse_duration_ns(o.timeout);
  if (!timeout) return report_error("query", make_error("usage", "--timeout: " + timeout.error().message), json);
  sqlguard::QueryLimits limits;
  limits.max_rows = o.limit;
  limits.deadline_ms = std::max<int64_t>(1, *timeout / 1'000'000);
  auto conn = sqlguard::GuardedConnection::open(o.db);
  if (!conn) return report_error("query", conn.error(), json);
  auto r = conn->run(sql, limits);
  if (!r) return report_error("query", r.error(), json);
  // A stale read (data only in a -wal this reader cannot use) was said on stderr at open;
  // --json says it too, in the document (docs/INTERFACES.md "Stale reads").
  if (json) {
    auto doc = sqlguard::to_json(*r);
    note_stale_read(doc, conn->handle());
    print_json(std::move(doc));
  } else {
    print_table(*r, o.limit);
  }
  return kExitOk;
}

Runner setup(CLI::App& app) {
  auto o = std::make_shared<Options>();
  add_db_option(app, o->db);
  app.add_flag("--json", o->json,
               "print {\"columns\", \"column_types\", \"rows\", \"truncated\", \"elapsed_ms\"} as one JSON document "
               "(plus \"stale\": true and \"warnings\" when the DB's newest commits were out of reach)");
  app.add_option("--limit", o->limit, "at most N rows (1-10000); more are cut and reported as truncated")
      ->capture_default_str()
      ->check(CLI::Range(size_t{1}, sqlguard::kMaxRowsHardCap));
  app.add_option("--timeout", o->timeout, "stop the query after this long (e.g. 500ms, 10s)")->capture_default_str();
  app.add_flag("--schema", o->schema, "describe the tables, views, units and example queries instead");
  app.add_option("sql", o->sql, "one SELECT / WITH ... SELECT / VALUES / EXPLAIN statement; '-' or none reads stdin");
  app.footer(
      "The SQL runs read-only through sqlguard: one statement, allow-listed functions, a deadline and\n"
      "row/size caps. Put `--` before SQL that starts with a dash (e.g. a `-- comment`).\n\n"
      "Examples:\n"
      "  causeway query \"SELECT op, count(*) AS n, max(dur_us) FROM v_calls GROUP BY op ORDER BY n DESC\"\n"
      "  causeway query --json --limit 50 -- \"-- slowest calls\n"
      "      SELECT op, comm, dur_us FROM v_cuda_calls ORDER BY dur_us DESC\"\n"
      "  causeway query --schema             tables, views, columns with units, example queries\n"
      "  echo \"SELECT * FROM v_chains\" | causeway query");
  return [o] { return run(*o); };
}

const Registrar reg{{"query", "run one read-only SQL query over the trace DB (sqlguard)", 60, setup}};

}  // namespace causeway::cli::cmd_query
