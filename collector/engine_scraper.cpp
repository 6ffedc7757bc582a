#include "collector/engine_scraper.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <sstream>

#include "collector/http_get.h"

namespace causeway::collector {
namespace {

// A port that never answered after this many tries is not a metrics endpoint.
constexpr uint32_t kMaxMisses = 5;
// One that answered and then failed this many times in a row has gone (the server exited).
constexpr uint32_t kMaxMissesServing = 30;
// Own connections remembered: a few intervals' worth for every server.
constexpr size_t kOwnPorts = 256;
constexpr size_t kMaxTargets = 64;

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

EngineScraper::EngineScraper(int64_t interval_ns) : interval_ns_(interval_ns), thread_([this] { run(); }) {}

EngineScraper::~EngineScraper() { stop(); }

void EngineScraper::stop() {
  {
    std::lock_guard lk(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void EngineScraper::add(uint32_t pid, uint16_t port) {
  std::lock_guard lk(mu_);
  if (!targets_.count(pid) && targets_.size() >= kMaxTargets) return;
  Target& t = targets_[pid];
  t.pid = pid;
  if (std::find(t.ports.begin(), t.ports.end(), port) == t.ports.end()) t.ports.push_back(port);
}

std::vector<EngineSampleRecord> EngineScraper::take() {
  std::lock_guard lk(mu_);
  return std::exchange(out_, {});
}

bool EngineScraper::own_peer(std::string_view peer) const {
  const size_t colon = peer.rfind(':');
  if (colon == std::string_view::npos || peer.substr(0, colon) != "127.0.0.1") return false;
  const std::string_view port = peer.substr(colon + 1);
  if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string_view::npos) return false;
  const unsigned long n = std::stoul(std::string(port));
  if (n > 65535) return false;
  const auto p = static_cast<uint16_t>(n);
  std::lock_guard lk(mu_);
  return std::find(own_ports_.begin(), own_ports_.end(), p) != own_ports_.end();
}

ScraperCounters EngineScraper::counters() const {
  std::lock_guard lk(mu_);
  return counters_;
}

void EngineScraper::note_port(void* self, uint16_t port) {
  auto* s = static_cast<EngineScraper*>(self);
  std::lock_guard lk(s->mu_);
  s->own_ports_.push_back(port);
  if (s->own_ports_.size() > kOwnPorts) s->own_ports_.pop_front();
}

void EngineScraper::scrape(Target& t) {
  if (!t.named) {
    t.engine = engine_of(t.pid);
    t.named = true;
  }
  const uint16_t port = t.ports[t.port_index];
  HttpGetOptions o;
  // A scrape may take most of an interval, never more than a second.
  o.deadline_ns = std::clamp<int64_t>(interval_ns_ * 3 / 4, 50'000'000, 1'000'000'000);
  o.on_local_port = &EngineScraper::note_port;
  o.ctx = this;
  auto body = http_get_local(port, "/metrics", o);
  const int64_t ts = real_ns();
  requests::PromParse parsed;
  if (body) parsed = requests::parse_prometheus(*body);
  std::lock_guard lk(mu_);
  if (!body || parsed.samples.empty()) {
    ++counters_.failures;
    ++t.misses;
    // Before the first answer, try the server's next port.
    if (!t.serving) t.port_index = (t.port_index + 1) % t.ports.size();
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
  r.url = "http://127.0.0.1:" + std::to_string(port) + "/metrics";
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
    next += std::chrono::nanoseconds(interval_ns_);
    if (next < std::chrono::steady_clock::now()) next = std::chrono::steady_clock::now() + std::chrono::nanoseconds(interval_ns_);
    std::vector<uint32_t> pids;
    for (const auto& [pid, t] : targets_)
      if (t.misses < (t.serving ? kMaxMissesServing : kMaxMisses * t.ports.size())) pids.push_back(pid);
    for (uint32_t pid : pids) {
      Target t = targets_[pid];  // scraped unlocked: add() and take() never wait on a scrape
      lk.unlock();
      scrape(t);
      lk.lock();
      Target& cur = targets_[pid];
      t.ports = cur.ports;  // ports added meanwhile
      cur = t;
      if (stop_) break;
    }
  }
}

}  // namespace causeway::collector
