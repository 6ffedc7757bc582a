#include "collector/cgroup_resolver.h"

#include <dirent.h>
#include <sys/stat.h>

#include "collector/cgroup_paths.h"

namespace causeway::collector {
namespace {

// A cgroup tree is a few levels deep (kubepods/<qos>/pod<uid>/<container>/…); these bound a
// pathological one (a folder loop is impossible in cgroupfs, but the mount could be anything).
constexpr size_t kMaxFolders = 1 << 20;
constexpr size_t kMaxDepth = 64;

}  // namespace

std::unordered_map<uint64_t, std::string> scan_cgroup_tree(const std::string& mount) {
  std::unordered_map<uint64_t, std::string> tree;
  struct stat st {};
  if (::stat(mount.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return tree;
  tree.emplace(st.st_ino, "/");
  struct Folder {
    std::string rel;  // "" for the mount itself, else "/a/b"
    size_t depth;
  };
  std::vector<Folder> todo{{"", 0}};
  while (!todo.empty() && tree.size() < kMaxFolders) {
    Folder f = std::move(todo.back());
    todo.pop_back();
    DIR* d = ::opendir((mount + f.rel).c_str());
    if (!d) continue;  // removed since its parent was read
    while (dirent* e = ::readdir(d)) {
      const std::string_view name(e->d_name);
      if (name == "." || name == "..") continue;
      // cgroupfs fills d_type and d_ino (= the cgroup id); other filesystems may not.
      bool dir = e->d_type == DT_DIR;
      uint64_t ino = e->d_ino;
      const std::string rel = f.rel + "/" + std::string(name);
      if (e->d_type == DT_UNKNOWN) {
        struct stat s {};
        if (::lstat((mount + rel).c_str(), &s) != 0) continue;
        dir = S_ISDIR(s.st_mode);
        ino = s.st_ino;
      }
      if (!dir) continue;
      tree.emplace(ino, rel);
      if (f.depth + 1 < kMaxDepth) todo.push_back({rel, f.depth + 1});
    }
    ::closedir(d);
  }
  return tree;
}

CgroupResolver::CgroupResolver(std::optional<std::string> mount, StoreWriter& writer,
                               std::chrono::milliseconds min_rescan)
    : mount_(std::move(mount)), writer_(writer), min_rescan_(min_rescan), thread_([this] { run(); }) {}

CgroupResolver::~CgroupResolver() { finish(); }

void CgroupResolver::note(uint64_t id) {
  if (id == 0 || !noted_.insert(id).second) return;
  {
    std::lock_guard lock(mu_);
    queue_.push_back(id);
  }
  cv_.notify_one();
}

void CgroupResolver::finish() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_one();
  if (thread_.joinable()) thread_.join();
}

std::vector<uint64_t> CgroupResolver::take_queued() {
  std::lock_guard lock(mu_);
  std::vector<uint64_t> out;
  out.swap(queue_);
  return out;
}

void CgroupResolver::emit(uint64_t id, const std::string* path) {
  CgroupRecord r;
  r.id = id;
  if (path) {
    r.path = *path;
    ContainerIdentity c = container_of(*path);
    r.container_id = std::move(c.container_id);
    r.pod = std::move(c.pod);
    resolved_.fetch_add(1, std::memory_order_relaxed);
  } else {
    unresolved_.fetch_add(1, std::memory_order_relaxed);
  }
  writer_.push_meta(std::move(r));
}

void CgroupResolver::run() {
  for (;;) {
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and every id noted is stored
    }
    std::vector<uint64_t> misses;
    for (uint64_t id : take_queued()) {
      auto it = tree_.find(id);
      if (it != tree_.end()) emit(id, &it->second);
      else misses.push_back(id);
    }
    if (!misses.empty()) resolve_misses(std::move(misses));
  }
}

void CgroupResolver::resolve_misses(std::vector<uint64_t> misses) {
  if (!mount_) {
    for (uint64_t id : misses) emit(id, nullptr);
    return;
  }
  {
    // A stop cuts the wait short: the last scan happens now.
    std::unique_lock lock(mu_);
    cv_.wait_until(lock, last_scan_ + min_rescan_, [&] { return stop_; });
  }
  // Ids noted while waiting ride along: the scan starts after they were seen.
  for (uint64_t id : take_queued()) misses.push_back(id);
  last_scan_ = std::chrono::steady_clock::now();
  tree_ = scan_cgroup_tree(*mount_);
  for (uint64_t id : misses) {
    auto it = tree_.find(id);
    emit(id, it != tree_.end() ? &it->second : nullptr);
  }
}

}  // namespace causeway::collector
