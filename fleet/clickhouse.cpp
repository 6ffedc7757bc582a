#include "fleet/clickhouse.h"

#include <httplib.h>

#include <algorithm>
#include <cctype>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>

#include "common/sanitize.h"
#include "fleet/socket_bytes.h"
#include "fleet/tsv.h"

namespace causeway::fleet {

// A refused or reset connection fails at once; a silent one at the call's deadline at the
// latest (docs/FLEET.md "Limits and deadlines"). Connect and write keep their own shorter
// bounds: a host that does not accept in 3 s is not there.
constexpr time_t kConnectTimeoutS = 3;
constexpr time_t kWriteTimeoutS = 10;
// What of an error answer is kept: its first line is the message.
constexpr size_t kErrorAnswerBytes = 16 << 10;

using StoreClock = std::chrono::steady_clock;

struct ClickHouse::Impl {
  httplib::Client client;
  // The connection's socket and what it had received when the call began: the watchdog
  // bounds the bytes of a whole answer, headers included (fleet/socket_bytes.h).
  std::atomic<int> fd{-1};
  std::atomic<uint64_t> received_before{0};
  explicit Impl(const Endpoint& e) : client(e.url) {
    client.set_socket_options([this](socket_t s) {
      received_before.store(0);
      fd.store(s);
    });
    client.set_connection_timeout(kConnectTimeoutS);
    client.set_write_timeout(kWriteTimeoutS);
    client.set_keep_alive(true);
    client.set_tcp_nodelay(true);  // headers and body go in two writes: no 40 ms delayed-ACK stall each
    client.set_decompress(false);  // nothing compressed is asked for: a compressed answer is malformed, not inflated
    if (!e.ca_file.empty()) client.set_ca_cert_path(e.ca_file.c_str());
  }
};

struct ClickHouse::Call {
  std::string query_param;  // in the URL (an INSERT's statement)
  std::string body;         // the statement, or TabSeparated rows
  const std::vector<std::string_view>* pieces = nullptr;  // a Native block, streamed
  bool in_database = false;
  AnswerLimit limit;
};

ClickHouse::ClickHouse(Endpoint e, std::shared_ptr<const CallStop> stop)
    : e_(std::move(e)), stop_(std::move(stop)), impl_(std::make_unique<Impl>(e_)) {}
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

std::string store_mib_text(size_t bytes) {
  char buf[32];
  if (bytes >= (1 << 20)) std::snprintf(buf, sizeof buf, "%.0f MiB", static_cast<double>(bytes) / (1 << 20));
  else std::snprintf(buf, sizeof buf, "%zu KiB", bytes >> 10);
  return buf;
}

std::string store_seconds_text(std::chrono::milliseconds d) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g s", static_cast<double>(d.count()) / 1000);
  return buf;
}

// One call's watchdog: past the deadline, or once the shared stop is set, it shuts the
// client's socket down (cpp-httplib's stop(): the one thing safe from another thread), so a
// server that trickles a byte now and then cannot hold the call past its deadline — the
// library's own timeouts are per read. It keeps at it until the call returns (a stop that
// lands while the connection is being made waits for it, 3 s at most).
class StoreCallWatch {
 public:
  enum class Fired { No, Deadline, Stopped, TooLarge };

  // `wire_cap`: the most the connection may receive in this call, headers and framing included
  // (the answer's own limit is kept exactly by the content receiver; this catches what comes
  // before it: endless header lines).
  StoreCallWatch(httplib::Client& client, StoreClock::time_point deadline, const CallStop* stop, const std::atomic<int>& fd,
                 const std::atomic<uint64_t>& received_before, uint64_t wire_cap)
      : thread_([this, &client, deadline, stop, &fd, &received_before, wire_cap] {
          std::unique_lock<std::mutex> l(mu_);
          while (!done_) {
            if (fired_ == Fired::No) {
              if (stop && stop->stop.load(std::memory_order_acquire)) fired_ = Fired::Stopped;
              else if (StoreClock::now() >= deadline) fired_ = Fired::Deadline;
              else if (auto got = tcp_bytes_received(fd.load()); got && *got - std::min(*got, received_before.load()) > wire_cap)
                fired_ = Fired::TooLarge;
            }
            if (fired_ != Fired::No) {
              l.unlock();
              client.stop();
              l.lock();
            }
            const auto tick = StoreClock::now() + std::chrono::milliseconds(5);
            cv_.wait_until(l, fired_ == Fired::No ? std::min(deadline, tick) : tick, [this] { return done_; });
          }
        }) {}

  ~StoreCallWatch() { finish(); }

  Fired finish() {
    {
      std::lock_guard<std::mutex> l(mu_);
      done_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
    return fired_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  Fired fired_ = Fired::No;
  std::thread thread_;
};

StoreClock::time_point store_call_deadline(const Endpoint& e, const CallStop* stop, StoreClock::time_point start) {
  auto d = start + e.call_timeout;
  if (stop) {
    const int64_t until = stop->until_ns.load(std::memory_order_acquire);
    if (until != INT64_MAX) d = std::min(d, StoreClock::time_point(std::chrono::nanoseconds(until)));
  }
  return d;
}

}  // namespace

namespace clickhouse_post {

// The URL path of a call: no database= parameter unless asked (statements name db.table, and
// the database may not exist yet); the database is a checked identifier (endpoint.h), safe in
// a URL as it is; an INSERT's statement goes in query=, percent-encoded.
std::string call_path(const std::string& database, bool in_database, const std::string& query_param) {
  std::string path = in_database ? "/?database=" + database + "&" : "/?";
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
  return path;
}

// The request's body: a Native block streamed from the caller's buffers (httplib would copy a
// string body first), or the statement / TabSeparated rows.
void set_body(httplib::Request& req, const std::vector<std::string_view>* pieces, const std::string& body) {
  if (pieces) {
    size_t total = 0;
    for (std::string_view p : *pieces) total += p.size();
    req.headers.emplace("Content-Type", "application/octet-stream");
    req.content_length_ = total;
    req.content_provider_ = [pieces = pieces](size_t offset, size_t, httplib::DataSink& sink) {
      for (std::string_view p : *pieces) {  // the piece holding `offset`, written to its end
        if (offset >= p.size()) {
          offset -= p.size();
          continue;
        }
        return sink.write(p.data() + offset, p.size() - offset);
      }
      return false;
    };
  } else {
    req.headers.emplace("Content-Type", "text/plain");
    req.body = body;
  }

}

// What a call that was neither stopped, late nor too large came to: the answer, or why not.
Result<std::string> outcome(const Endpoint& e, bool in_database, int status, const std::string& answer, bool sent,
                            httplib::Error err) {
  if (!sent && status != -1 && status != 200 && err == httplib::Error::Canceled) sent = true;  // an error answer, cut
  if (!sent)
    return make_error("fleet_unreachable", "cannot reach ClickHouse at " + e.url + ": " + httplib::to_string(err) +
                                               " (is the server up and the URL its HTTP port?)");
  if (status == 200) return answer;
  if (auth_failure(status, answer))
    return make_error("fleet_auth", "ClickHouse at " + e.url + " refused user '" + e.user + "': " + server_message(answer) +
                                        " (check --user and --password-file)");
  std::string msg = server_message(answer);
  // A readonly=1 profile refuses every write and every setting: say which user it was.
  // A reader's own SQL (run_sql) runs in the database; anything else refused so is a ship.
  if (msg.find("readonly mode") != std::string::npos)
    msg += " (user '" + e.user + "' is read-only: " +
           (in_database ? "no writes, settings or table functions from a fleet reader)" : "ship needs the writer)");
  return make_error("fleet_refused", "ClickHouse at " + e.url + " refused the request (HTTP " + std::to_string(status) +
                                         "): " + msg);
}

}  // namespace clickhouse_post

Result<std::string> ClickHouse::post(const Call& call) {
  std::string path = clickhouse_post::call_path(e_.database, call.in_database, call.query_param);
  httplib::Request req;
  req.method = "POST";
  req.path = path;
  req.headers = {{"X-ClickHouse-User", e_.user}, {"X-ClickHouse-Key", e_.password}};
  clickhouse_post::set_body(req, call.pieces, call.body);

  // The answer is read as it arrives, never past its limit: cpp-httplib's own payload limit
  // is unlimited. An error answer keeps only its start (the message is its first line).
  httplib::Response res;
  std::string answer;
  bool too_large = false;
  req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
    const size_t cap = res.status == 200 ? call.limit.max_bytes : kErrorAnswerBytes;
    if (answer.size() + n > cap) {
      if (res.status != 200) answer.append(data, cap - answer.size());
      else too_large = true;
      return false;
    }
    if (answer.size() + n > answer.capacity()) answer.reserve(std::min(cap, std::max(answer.capacity() * 2, answer.size() + n)));
    answer.append(data, n);
    return true;
  };

  if (stop_ && stop_->stop.load(std::memory_order_acquire))
    return make_error("fleet_stopped", stop_->reason.empty() ? "the calls to the fleet store were stopped" : stop_->reason);
  const auto start = StoreClock::now();
  const auto deadline = store_call_deadline(e_, stop_.get(), start);
  const bool run_bound = stop_ && deadline < start + e_.call_timeout;  // the run's time left, not --timeout
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - start);
  if (left.count() <= 0) {
    if (stop_ && stop_->stop.load(std::memory_order_acquire)) return make_error("fleet_stopped", stop_->reason);
    return make_error("fleet_timeout", "no time left for another call to the fleet store at " + e_.url +
                                           (stop_ && !stop_->reason.empty() ? " (" + stop_->reason + ")" : ""));
  }
  // A read waits at most 30 s, and not much past the call's deadline: the watchdog ends the
  // call as a whole at the deadline (the second after it lets the watchdog's error be the one).
  const auto per_read = std::min<int64_t>(left.count() + 1000, 30'000);
  impl_->client.set_read_timeout(per_read / 1000, (per_read % 1000) * 1000);
  httplib::Error err = httplib::Error::Success;
  bool sent;
  StoreCallWatch::Fired fired;
  {
    const int fd = impl_->fd.load();
    impl_->received_before.store(fd >= 0 ? tcp_bytes_received(fd).value_or(0) : 0);
    const uint64_t wire_cap = call.limit.max_bytes + call.limit.max_bytes / 8 + (1 << 20);
    StoreCallWatch watch(impl_->client, deadline, stop_.get(), impl_->fd, impl_->received_before, wire_cap);
    sent = impl_->client.send(req, res, err);
    fired = watch.finish();
  }
  if (fired == StoreCallWatch::Fired::Stopped)
    return make_error("fleet_stopped", stop_->reason.empty() ? "the call to the fleet store was stopped" : stop_->reason);
  if (fired == StoreCallWatch::Fired::Deadline) {
    const std::string bound = run_bound ? "the " + store_seconds_text(left) + " left to it (" + stop_->reason + ")"
                                        : store_seconds_text(e_.call_timeout) + " (the deadline of one call: --timeout)";
    return make_error("fleet_timeout", "the fleet store at " + e_.url + " did not finish answering " + call.limit.purpose +
                                           " within " + bound + "; " + std::to_string(answer.size()) +
                                           " bytes had arrived; nothing from it was used");
  }
  if (too_large || fired == StoreCallWatch::Fired::TooLarge)
    return make_error("fleet_answer_too_large", "the fleet store's answer from " + e_.url + " passed " + store_mib_text(call.limit.max_bytes) +
                                                    " (the limit for " + call.limit.purpose +
                                                    "); reading stopped there and nothing from it was used" +
                                                    (call.limit.max_bytes == e_.max_answer_bytes
                                                         ? " (raise it with --max-answer, or narrow the question: --since)"
                                                         : " (more than such an answer can hold: is the URL ClickHouse?)"));
  return clickhouse_post::outcome(e_, call.in_database, res.status, answer, sent, err);
}

namespace {

// A statement that returns no rows gets an empty 200: anything else is not ClickHouse.
Result<void> store_expect_empty(Result<std::string> r, const std::string& url) {
  if (!r) return r.error();
  if (!r->empty())
    return make_error("fleet_bad_answer", "the fleet store at " + url + " answered " + std::to_string(r->size()) +
                                              " bytes to a statement that returns none ('" + sanitize_untrusted(*r, 60) +
                                              "'): not ClickHouse? nothing was believed");
  return {};
}

}  // namespace

Result<void> ClickHouse::execute(const std::string& sql) {
  return store_expect_empty(post({"", sql, nullptr, false, kStatementAnswer}), e_.url);
}

Result<std::string> ClickHouse::query_in_database(const std::string& sql) {
  return post({"", sql, nullptr, true, {e_.max_answer_bytes, "a fleet reader's query (--max-answer)"}});
}

Result<void> ClickHouse::insert_tsv(const std::string& table, const std::string& tsv) {
  return store_expect_empty(post({"INSERT INTO " + this->table(table) + " FORMAT TabSeparated", tsv, nullptr, false, kStatementAnswer}),
                      e_.url);
}

Result<void> ClickHouse::insert_native(const std::string& table, const std::vector<std::string_view>& pieces) {
  return store_expect_empty(post({"INSERT INTO " + this->table(table) + " FORMAT Native", "", &pieces, false, kStatementAnswer}), e_.url);
}

Result<StoreRows> ClickHouse::select(const std::string& sql, const std::vector<ColumnKind>& kinds) {
  return select(sql, kinds, {e_.max_answer_bytes, "a fleet reader's query (--max-answer)"});
}

Result<StoreRows> ClickHouse::select(const std::string& sql, const std::vector<ColumnKind>& kinds, const AnswerLimit& limit) {
  auto r = post({"", sql + " FORMAT TabSeparatedWithNamesAndTypes", nullptr, false, limit});
  if (!r) return r.error();
  // The statement's start names it in a malformed answer's error.
  std::string asked = sql.substr(0, std::min<size_t>(sql.find(" FROM "), 60));
  if (asked.size() < sql.size()) asked += "…";
  return parse_typed_answer(*r, kinds, "'" + asked + "'");
}

}  // namespace causeway::fleet
