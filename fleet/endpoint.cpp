#include "fleet/endpoint.h"

#include "common/user_input.h"
#include "fleet/clickhouse.h"

namespace causeway::fleet {

bool valid_identifier(const std::string& s) {
  if (s.empty() || s.size() > 64) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    bool alpha = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
    if (!alpha && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

namespace {

std::string trim(std::string s) {
  const char* ws = " \t\r\n";
  size_t b = s.find_first_not_of(ws);
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(ws) - b + 1);
}

}  // namespace

Result<Endpoint> make_endpoint(std::string url, std::string database, std::string user, const std::string& password_file,
                               std::string ca_file) {
  if (url.rfind("http://", 0) != 0 && url.rfind("https://", 0) != 0)
    return make_error("usage", "the fleet URL must be ClickHouse's HTTP interface, http://HOST:8123 or https://HOST:8443 (got '" +
                                   url + "')");
  while (!url.empty() && url.back() == '/') url.pop_back();
  if (url.find('/', url.find("//") + 2) != std::string::npos || url.find('?') != std::string::npos ||
      url.find('@') != std::string::npos)
    return make_error("usage", "the fleet URL is scheme://host:port only (no path, query or user@; use --user and "
                               "--password-file): '" + url + "'");
  if (!valid_identifier(database)) return make_error("usage", "--database must be a plain name ([A-Za-z_][A-Za-z0-9_]*)");
  if (!valid_identifier(user)) return make_error("usage", "--user must be a plain name ([A-Za-z_][A-Za-z0-9_]*)");
  Endpoint e{std::move(url), std::move(database), std::move(user), "", std::move(ca_file)};
  if (!password_file.empty()) {
    auto text = read_user_input(password_file, "--password-file", 64 << 10);
    if (!text) return make_error("fleet_password", text.error().message);
    e.password = trim(*text);
  }
  return e;
}

Result<ReaderReach> probe_reader_reach(const Endpoint& e) {
  ClickHouse ch(e);
  ReaderReach reach;
  // e.database passed valid_identifier: safe to splice.
  auto dbs = ch.select("SELECT name FROM system.databases WHERE name NOT IN ('system', 'INFORMATION_SCHEMA', "
                       "'information_schema', '" + e.database + "') ORDER BY name",
                       {ColumnKind::Text});
  if (!dbs) return dbs.error();
  for (const auto& row : *dbs)
    if (!row.empty()) reach.other_databases.push_back(row[0]);
  auto readonly = ch.select("SELECT value FROM system.settings WHERE name = 'readonly'", {ColumnKind::Text});
  if (!readonly) return readonly.error();
  reach.can_write = readonly->empty() || readonly->front().empty() || readonly->front()[0] == "0";
  return reach;
}

std::string ReaderReach::describe(const Endpoint& e) const {
  std::string out = "the user " + e.user;
  if (!other_databases.empty()) {
    out += " can read databases other than " + e.database + ": ";
    for (size_t i = 0; i < other_databases.size() && i < 10; ++i) out += (i ? ", " : "") + other_databases[i];
    if (other_databases.size() > 10) out += " and " + std::to_string(other_databases.size() - 10) + " more";
  }
  if (can_write) out += std::string(other_databases.empty() ? "" : ", and") + " can write (its profile has readonly=0)";
  return out;
}

}  // namespace causeway::fleet
