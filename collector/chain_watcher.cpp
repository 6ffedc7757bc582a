#include "collector/chain_watcher.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <iostream>
#include <vector>

#include "diagnosis/correlator.h"
#include "diagnosis/request_chains.h"
#include "tracedb/chain_store.h"
#include "tracedb/open.h"

namespace causeway::collector {

namespace {
constexpr int kAnalysisNice = 10;
// Request chains are recomputed over all of the session's requests: at most this often while
// the trace runs (and once at its end), so a long busy session does not spend its analysis
// thread re-reading them.
constexpr int64_t kRequestChainsEveryNs = 10'000'000'000;
}

struct ChainWatcher::Impl {
  std::string db_path;
  StoreWriter& writer;
  int64_t interval_ns;
  std::function<void(const std::map<std::string, uint64_t>&)> on_chains;
  std::function<void(sqlite3*, int64_t)> on_request_pass;
  LiveCorrelator live;
  DbHandle ro;
  std::map<std::string, std::string> cause_of;  // chain id -> cause
  std::mutex mu;
  std::condition_variable cv;
  bool stop = false;
  std::thread thread;
  pid_t thread_tid = 0;  // the analysis thread's while it runs (under mu): finish raises its nice
  int capture_nice = 0;  // the nice it had from the tracer, given back at finish
  bool warned = false;
  int64_t session_id;
  std::string request_prefix;
  int64_t request_chains_at = INT64_MIN;  // monotonic ns of the last request-chain pass
  bool request_chains_stored = false;     // the last pass stored some

  Impl(std::string path, StoreWriter& w, int64_t sid, int64_t start, int64_t interval,
       std::function<void(const std::map<std::string, uint64_t>&)> cb, std::function<void(sqlite3*, int64_t)> on_pass)
      : db_path(std::move(path)),
        writer(w),
        interval_ns(interval),
        on_chains(std::move(cb)),
        on_request_pass(std::move(on_pass)),
        live(sid, start),
        session_id(sid),
        request_prefix(request_chain_id_prefix(sid)) {}

  void push(const std::vector<ChainRecord>& chains) {
    for (const ChainRecord& c : chains) {
      cause_of[c.id] = c.cause;
      writer.push_meta(c);
    }
    report();
  }

  void report() {
    if (on_chains) {
      std::map<std::string, uint64_t> by_cause;
      for (const auto& [id, cause] : cause_of) ++by_cause[cause];
      on_chains(by_cause);
    }
  }

  // A failed poll is reported once and retried next interval: diagnosis must never stop
  // the capture.
  void poll_once(bool final) {
    if (!ro) {
      auto db = open_read_only(db_path);
      if (!db) {
        if (!warned) std::cerr << "causeway trace: live diagnosis paused: " << db.error().message << std::endl;
        warned = true;
        return;
      }
      ro = std::move(*db);
    }
    auto r = final ? live.finish(ro.get()) : live.poll(ro.get());
    if (!r) {
      if (!warned) std::cerr << "causeway trace: live diagnosis: " << r.error().message << std::endl;
      warned = true;
      return;
    }
    push(*r);
    if (auto causes = live.take_call_causes(); !causes.empty()) writer.push_meta(CallCausesRecord{std::move(causes)});
    request_pass(final);
  }

  // The session's request chains (diagnosis/request_chains.h), replacing the last pass's.
  void request_pass(bool final) {
    const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                            std::chrono::steady_clock::now().time_since_epoch())
                            .count();
    if (!final && request_chains_at != INT64_MIN && now - request_chains_at < kRequestChainsEveryNs) return;
    request_chains_at = now;
    auto r = requests::request_chain_records(ro.get(), session_id);
    if (!r) {
      if (!warned) std::cerr << "causeway trace: request chains: " << r.error().message << std::endl;
      warned = true;
      return;
    }
    if (on_request_pass) on_request_pass(ro.get(), session_id);
    if (r->empty() && !request_chains_stored) return;  // no requests served (yet): nothing to replace
    request_chains_stored = !r->empty();
    std::erase_if(cause_of, [&](const auto& kv) { return kv.first.rfind(request_prefix, 0) == 0; });
    for (const ChainRecord& c : *r) cause_of[c.id] = c.cause;
    writer.push_meta(RequestChainsRecord{std::move(*r)});
    report();
  }

  void run() {
    // Capture first: on a busy host the analysis (which can run late) yields its CPU to the
    // writer and the ring drain (which cannot) rather than taking a fair share from them.
    // Linux nice is per thread; failing to lower it only costs that preference.
    std::unique_lock lock(mu);
    thread_tid = ::gettid();
    errno = 0;
    if (const int n = ::getpriority(PRIO_PROCESS, static_cast<id_t>(thread_tid)); errno == 0) capture_nice = n;
    (void)::setpriority(PRIO_PROCESS, static_cast<id_t>(thread_tid), std::max(kAnalysisNice, capture_nice));
    while (!stop) {
      cv.wait_for(lock, std::chrono::nanoseconds(interval_ns), [&] { return stop; });
      if (stop) break;
      lock.unlock();
      poll_once(false);
      lock.lock();
    }
    thread_tid = 0;  // under mu: finish never sets the nice of a thread that has gone
  }
};

ChainWatcher::ChainWatcher(std::string db_path, StoreWriter& writer, int64_t session_id, int64_t session_start_ns,
                           int64_t interval_ns, std::function<void(const std::map<std::string, uint64_t>&)> on_chains,
                           std::function<void(sqlite3*, int64_t)> on_request_pass)
    : impl_(std::make_unique<Impl>(std::move(db_path), writer, session_id, session_start_ns, interval_ns,
                                   std::move(on_chains), std::move(on_request_pass))) {}

ChainWatcher::~ChainWatcher() {
  {
    std::lock_guard lock(impl_->mu);
    impl_->stop = true;
  }
  impl_->cv.notify_all();
  if (impl_->thread.joinable()) impl_->thread.join();
}

void ChainWatcher::start() {
  impl_->thread = std::thread([this] { impl_->run(); });
}

Result<size_t> ChainWatcher::finish() {
  {
    std::lock_guard lock(impl_->mu);
    impl_->stop = true;
    // A poll still running now holds up the trace's exit: it no longer yields to the capture,
    // which has stopped. At nice 10 on a loaded host the wait for it took 1.9 s of a 4.5 s
    // stop. (Raising it back needs CAP_SYS_NICE, which a tracer has; without, the wait stays.)
    if (impl_->thread_tid > 0) (void)::setpriority(PRIO_PROCESS, static_cast<id_t>(impl_->thread_tid), impl_->capture_nice);
  }
  impl_->cv.notify_all();
  if (impl_->thread.joinable()) impl_->thread.join();
  impl_->poll_once(true);
  return impl_->cause_of.size();
}

}  // namespace causeway::collector
