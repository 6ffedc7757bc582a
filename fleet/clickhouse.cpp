#include "fleet/clickhouse.h"

#include <httplib.h>

#include <cctype>
#include <cstdio>

#include "common/sanitize.h"
#include "fleet/tsv.h"

namespace causeway::fleet {

// Timeouts bound how long a dead server or a cut link can hold `ship`: a refused or reset
// connection fails at once, a silent one after these (docs/FLEET.md "Exactly once").
constexpr time_t kConnectTimeoutS = 3;
constexpr time_t kReadTimeoutS = 30;
constexpr time_t kWriteTimeoutS = 10;

struct ClickHouse::Impl {
  httplib::Client client;
  explicit Impl(const Endpoint& e) : client(e.url) {
    client.set_connection_timeout(kConnectTimeoutS);
    client.set_read_timeout(kReadTimeoutS);
    client.set_write_timeout(kWriteTimeoutS);
    client.set_keep_alive(true);
    client.set_tcp_nodelay(true);  // headers and body go in two writes: no 40 ms delayed-ACK stall each
    if (!e.ca_file.empty()) client.set_ca_cert_path(e.ca_file.c_str());
  }
};

ClickHouse::ClickHouse(Endpoint e) : e_(std::move(e)), impl_(std::make_unique<Impl>(e_)) {}
ClickHouse::~ClickHouse() = default;

namespace {

// ClickHouse's exception codes for a login it refused: unknown user (192), wrong password
// (193), password required (194), address not allowed for the user (195), 516 in newer ones.
bool auth_failure(int status, const std::string& body) {
  if (status == 401 || status == 403) return true;
  for (const char* code : {"Code: 192,", "Code: 193,", "Code: 194,", "Code: 195,", "Code: 516."})
    if (body.rfind(code, 0) == 0) return true;
  return false;
}

// "Code: 60, e.displayText() = DB::Exception: Table x doesn't exist., e.what() = …" → the
// readable middle part, cut to one line (the server's text is not ours: sanitized).
std::string server_message(const std::string& body) {
  std::string m = body.substr(0, body.find('\n'));
  if (size_t p = m.find("DB::Exception: "); p != std::string::npos) m = m.substr(p + 15);
  if (size_t p = m.find(", e.what()"); p != std::string::npos) m = m.substr(0, p);
  return sanitize_untrusted(m, 400);
}

}  // namespace

Result<std::string> ClickHouse::post(const std::string& query_param, const std::string& body, bool in_database,
                                     const std::vector<std::string_view>* pieces) {
  // No database= parameter unless asked: statements name db.table (the database may not exist
  // yet). The database is a checked identifier (endpoint.h), safe in a URL as it is.
  std::string path = in_database ? "/?database=" + e_.database + "&" : "/?";
  if (!query_param.empty()) {
    path += "query=";
    for (unsigned char c : query_param) {
      if (std::isalnum(c) || c == '_' || c == '.' || c == '-') path += static_cast<char>(c);
      else {
        char hex[4];
        std::snprintf(hex, sizeof hex, "%%%02X", c);
        path += hex;
      }
    }
  }
  httplib::Headers headers{{"X-ClickHouse-User", e_.user}, {"X-ClickHouse-Key", e_.password}};
  auto send = [&]() -> httplib::Result {
    if (!pieces) return impl_->client.Post(path.c_str(), headers, body, "text/plain");
    // Streamed from the caller's buffers: httplib would copy a string body first.
    size_t total = 0;
    for (std::string_view p : *pieces) total += p.size();
    return impl_->client.Post(
        path.c_str(), headers, total,
        [pieces](size_t offset, size_t, httplib::DataSink& sink) {
          for (std::string_view p : *pieces) {  // the piece holding `offset`, written to its end
            if (offset >= p.size()) {
              offset -= p.size();
              continue;
            }
            return sink.write(p.data() + offset, p.size() - offset);
          }
          return false;
        },
        "application/octet-stream");
  };
  auto res = send();
  if (!res)
    return make_error("fleet_unreachable", "cannot reach ClickHouse at " + e_.url + ": " + httplib::to_string(res.error()) +
                                               " (is the server up and the URL its HTTP port?)");
  if (res->status == 200) return std::move(res->body);
  if (auth_failure(res->status, res->body))
    return make_error("fleet_auth", "ClickHouse at " + e_.url + " refused user '" + e_.user + "': " + server_message(res->body) +
                                        " (check --user and --password-file)");
  std::string msg = server_message(res->body);
  // A readonly=1 profile refuses every write and every setting: say which user it was.
  // A reader's own SQL (run_sql) runs in the database; anything else refused so is a ship.
  if (msg.find("readonly mode") != std::string::npos)
    msg += " (user '" + e_.user + "' is read-only: " +
           (in_database ? "no writes, settings or table functions from a fleet reader)" : "ship needs the writer)");
  return make_error("fleet_refused", "ClickHouse at " + e_.url + " refused the request (HTTP " + std::to_string(res->status) +
                                         "): " + msg);
}

Result<std::string> ClickHouse::execute(const std::string& sql) { return post("", sql); }

Result<std::string> ClickHouse::execute_in_database(const std::string& sql) { return post("", sql, true); }

Result<void> ClickHouse::insert_tsv(const std::string& table, const std::string& tsv) {
  auto r = post("INSERT INTO " + this->table(table) + " FORMAT TabSeparated", tsv);
  if (!r) return r.error();
  return {};
}

Result<void> ClickHouse::insert_native(const std::string& table, const std::vector<std::string_view>& pieces) {
  auto r = post("INSERT INTO " + this->table(table) + " FORMAT Native", "", false, &pieces);
  if (!r) return r.error();
  return {};
}

Result<std::vector<std::vector<std::string>>> ClickHouse::select(const std::string& sql) {
  auto r = post("", sql + " FORMAT TabSeparated");
  if (!r) return r.error();
  return tsv_rows(*r);
}

}  // namespace causeway::fleet
