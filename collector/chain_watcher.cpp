#include "collector/chain_watcher.h"

#include <sys/resource.h>
#include <unistd.h>

#include <iostream>
#include <vector>

#include "analysis/correlator.h"
#include "tracedb/open.h"

namespace causeway::collector {

namespace {
constexpr int kAnalysisNice = 10;
}

struct ChainWatcher::Impl {
  std::string db_path;
  StoreWriter& writer;
  int64_t interval_ns;
  std::function<void(const std::map<std::string, uint64_t>&)> on_chains;
  LiveCorrelator live;
  DbHandle ro;
  std::map<std::string, std::string> cause_of;  // chain id -> cause
  std::mutex mu;
  std::condition_variable cv;
  bool stop = false;
  std::thread thread;
  bool warned = false;

  Impl(std::string path, StoreWriter& w, int64_t sid, int64_t start, int64_t interval,
       std::function<void(const std::map<std::string, uint64_t>&)> cb)
      : db_path(std::move(path)), writer(w), interval_ns(interval), on_chains(std::move(cb)), live(sid, start) {}

  void push(const std::vector<ChainRecord>& chains) {
    for (const ChainRecord& c : chains) {
      cause_of[c.id] = c.cause;
      writer.push_meta(c);
    }
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
  }

  void run() {
    // Capture first: on a busy host the analysis (which can run late) yields its CPU to the
    // writer and the ring drain (which cannot) rather than taking a fair share from them.
    // Linux nice is per thread; failing to lower it only costs that preference.
    (void)::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), kAnalysisNice);
    std::unique_lock lock(mu);
    while (!stop) {
      cv.wait_for(lock, std::chrono::nanoseconds(interval_ns), [&] { return stop; });
      if (stop) break;
      lock.unlock();
      poll_once(false);
      lock.lock();
    }
  }
};

ChainWatcher::ChainWatcher(std::string db_path, StoreWriter& writer, int64_t session_id, int64_t session_start_ns,
                           int64_t interval_ns, std::function<void(const std::map<std::string, uint64_t>&)> on_chains)
    : impl_(std::make_unique<Impl>(std::move(db_path), writer, session_id, session_start_ns, interval_ns,
                                   std::move(on_chains))) {}

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
  }
  impl_->cv.notify_all();
  if (impl_->thread.joinable()) impl_->thread.join();
  impl_->poll_once(true);
  return impl_->cause_of.size();
}

}  // namespace causeway::collector
