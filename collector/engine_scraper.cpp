#include "collector/engine_scraper.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <sstream>

#include "collector/http_get.h"
#include "collector/netns.h"
#include "collector/sock_decode.h"

namespace causeway::collector {
namespace {

// A port that never answered after this many tries is not a metrics endpoint.
constexpr uint32_t kMaxMisses = 5;
// One that answered and then failed this many times in a row has gone (the server exited).
constexpr uint32_t kMaxMissesServing = 30;
constexpr size_t kMaxTargets = 64;
// How long a scrape connection the server had not answered stays told as ours after we closed
// it: a server that far behind on its backlog is not one we can tell apart any longer.
constexpr int64_t kOwnLinger = 10'000'000'000;

int64_t scraper_steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The process's command line and its children's: vLLM's API server names its engine core
// child `VLLM::EngineCore`, SGLang its scheduler `sglang::scheduler`.
requests::Engine engine_of(uint32_t pid) {
  const std::string p = "/proc/" + std::to_string(pid);
  requests::Engine e = requests::engine_from_cmdline(slurp(p + "/cmdline"));
  if (e != requests::Engine::unknown) return e;
  std::istringstream kids(slurp(p + "/task/" + std::to_string(pid) + "/children"));
  uint32_t c;
  for (int n = 0; n < 64 && kids >> c; ++n) {
    const std::string cp = "/proc/" + std::to_string(c);
    e = requests::engine_from_cmdline(slurp(cp + "/cmdline") + '\0' + slurp(cp + "/comm"));
    if (e != requests::Engine::unknown) return e;
  }
  return e;
}

int64_t real_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

EngineScraper::EngineScraper(int64_t interval_ns, OwnConnections own)
    : interval_ns_(interval_ns), own_(std::move(own)), thread_([this] { run(); }) {}

EngineScraper::~EngineScraper() { stop(); }

void EngineScraper::stop() {
  {
    std::lock_guard lk(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void EngineScraper::add(uint32_t pid, const Endpoint& at) {
  std::lock_guard lk(mu_);
  if (!targets_.count(pid) && targets_.size() >= kMaxTargets) return;
  Target& t = targets_[pid];
  t.pid = pid;
  const Endpoint to = at.reachable();
  if (std::find(t.endpoints.begin(), t.endpoints.end(), to) == t.endpoints.end()) t.endpoints.push_back(to);
}

std::vector<EngineSampleRecord> EngineScraper::take() {
  std::lock_guard lk(mu_);
  return std::exchange(out_, {});
}

ScraperCounters EngineScraper::counters() const {
  std::lock_guard lk(mu_);
  return counters_;
}

// On the scraping thread, from http_get: our connection is open, then about to close.
void EngineScraper::own_open(void* self, const Endpoint& server, const Endpoint& local) {
  auto* s = static_cast<EngineScraper*>(self);
  if (s->own_.open) s->own_.open(own_conn_key(s->scraping_netns_, server, local));
  std::lock_guard lk(s->mu_);
  ++s->counters_.connections;
}

void EngineScraper::own_close(void* self, const Endpoint& server, const Endpoint& local, bool answered) {
  auto* s = static_cast<EngineScraper*>(self);
  const cw_sock_conn key = own_conn_key(s->scraping_netns_, server, local);
  if (!answered) {
    s->lingering_.push_back({scraper_steady_ns() + kOwnLinger, key});
    return;
  }
  if (s->own_.close) s->own_.close(key);
}

void EngineScraper::forget_lingering(bool all) {
  const int64_t now = scraper_steady_ns();
  std::erase_if(lingering_, [&](const auto& l) {
    if (!all && l.first > now) return false;
    if (own_.close) own_.close(l.second);
    return true;
  });
}

void EngineScraper::scrape(Target& t) {
  if (!t.named) {
    t.engine = engine_of(t.pid);
    t.named = true;
  }
  const Endpoint at = t.endpoints[t.endpoint_index];
  HttpGetOptions o;
  // A scrape may take most of an interval, never more than a second.
  o.deadline_ns = std::clamp<int64_t>(interval_ns_ * 3 / 4, 50'000'000, 1'000'000'000);
  o.on_open = &EngineScraper::own_open;
  o.on_close = &EngineScraper::own_close;
  o.ctx = this;
  scraping_netns_ = static_cast<uint32_t>(net_namespace_of(t.pid));
  auto body = http_get(t.pid, at, "/metrics", o);
  const int64_t ts = real_ns();
  requests::PromParse parsed;
  if (body) parsed = requests::parse_prometheus(*body);
  std::lock_guard lk(mu_);
  if (!body || parsed.samples.empty()) {
    ++counters_.failures;
    // This thread could not leave a server's network namespace: any later scrape would
    // connect from the wrong one. Scraping ends; the trace goes on.
    if (!body && body.error().code == "netns_stuck") stop_ = true;
    // A listener scraped because it speaks HTTP is often busy when first scraped (added at
    // its first request, in the middle of a burst): a timeout there is no answer either way.
    if (!t.serving && !body && body.error().code == "timeout") return;
    ++t.misses;
    // Before the first answer, try the server's next address.
    if (!t.serving) t.endpoint_index = (t.endpoint_index + 1) % t.endpoints.size();
    return;
  }
  t.serving = true;
  t.misses = 0;
  ++counters_.scrapes;
  counters_.bad_lines += parsed.bad_lines;
  if (t.engine == requests::Engine::unknown) t.engine = requests::engine_from_samples(parsed.samples);
  EngineSampleRecord r;
  r.ts_ns = ts;
  r.pid = t.pid;
  r.engine = requests::engine_name(t.engine);
  r.url = "http://" + at.text() + "/metrics";
  for (auto& s : parsed.samples)
    if (requests::keep_sample(t.engine, s.name)) r.samples.push_back({std::move(s.name), std::move(s.labels), s.value});
  out_.push_back(std::move(r));
}

void EngineScraper::run() {
  std::unique_lock lk(mu_);
  auto next = std::chrono::steady_clock::now();
  while (!stop_) {
    cv_.wait_until(lk, next, [this] { return stop_; });
    if (stop_) break;
    forget_lingering(false);
    next += std::chrono::nanoseconds(interval_ns_);
    if (next < std::chrono::steady_clock::now()) next = std::chrono::steady_clock::now() + std::chrono::nanoseconds(interval_ns_);
    std::vector<uint32_t> pids;
    for (const auto& [pid, t] : targets_)
      if (t.misses < (t.serving ? kMaxMissesServing : kMaxMisses * t.endpoints.size())) pids.push_back(pid);
    for (uint32_t pid : pids) {
      Target t = targets_[pid];  // scraped unlocked: add() and take() never wait on a scrape
      lk.unlock();
      scrape(t);
      lk.lock();
      Target& cur = targets_[pid];
      t.endpoints = cur.endpoints;  // addresses added meanwhile
      cur = t;
      if (stop_) break;
    }
  }
}

void EngineScraper::forget_all_lingering() { forget_lingering(true); }

}  // namespace causeway::collector
