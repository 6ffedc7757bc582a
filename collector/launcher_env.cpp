#include "collector/launcher_env.h"

#include <algorithm>
#include <array>
#include <fstream>
#include <map>
#include <string>

namespace causeway::collector {
namespace {

constexpr int64_t kMaxWorldSize = 1 << 20;
constexpr size_t kMaxEnviron = 1 << 20;  // bytes read: launchers set their variables early
constexpr size_t kMaxJobId = 128;

// The variables of each launcher, most specific first: torchrun sets RANK, and under SLURM
// also leaves SLURM_PROCID of the launcher step (one task per node), so RANK wins.
struct Scheme {
  std::string_view rank, size, local;
};
constexpr Scheme kSchemes[] = {
    {"RANK", "WORLD_SIZE", "LOCAL_RANK"},
    {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"},
    {"PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID"},
    {"SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"},
};

std::optional<int64_t> strict_uint(std::string_view v) {
  if (v.empty() || v.size() > 7) return std::nullopt;
  int64_t n = 0;
  for (char c : v) {
    if (c < '0' || c > '9') return std::nullopt;
    n = n * 10 + (c - '0');
  }
  return n;
}

bool safe_job_id(std::string_view v) {
  if (v.empty() || v.size() > kMaxJobId) return false;
  for (char c : v)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '.' || c == '-' ||
          c == '_' || c == ':' || c == '/' || c == '[' || c == ']'))
      return false;
  return true;
}

}  // namespace

std::optional<LauncherRank> launcher_rank_from_environ(std::string_view environ) {
  static const std::map<std::string_view, int> wanted = [] {
    std::map<std::string_view, int> m;
    for (const Scheme& s : kSchemes) m[s.rank] = m[s.size] = m[s.local] = 1;
    for (std::string_view k : {"TORCHELASTIC_RUN_ID", "MASTER_ADDR", "MASTER_PORT", "SLURM_JOB_ID", "SLURM_STEP_ID"})
      m[k] = 1;
    return m;
  }();
  std::map<std::string_view, std::string_view> env;
  while (!environ.empty()) {
    size_t end = environ.find('\0');
    std::string_view entry = environ.substr(0, end);
    environ = end == std::string_view::npos ? std::string_view() : environ.substr(end + 1);
    size_t eq = entry.find('=');
    if (eq == std::string_view::npos) continue;
    std::string_view name = entry.substr(0, eq);
    // The first definition is the one getenv() returns.
    if (wanted.count(name)) env.emplace(name, entry.substr(eq + 1));
  }
  auto get = [&](std::string_view k) -> std::optional<std::string_view> {
    auto it = env.find(k);
    if (it == env.end()) return std::nullopt;
    return it->second;
  };
  for (const Scheme& s : kSchemes) {
    auto rv = get(s.rank), sv = get(s.size);
    if (!rv || !sv) continue;
    auto rank = strict_uint(*rv), size = strict_uint(*sv);
    if (!rank || !size || *size < 1 || *size > kMaxWorldSize || *rank >= *size) continue;
    LauncherRank r;
    r.rank = static_cast<int32_t>(*rank);
    r.world_size = static_cast<int32_t>(*size);
    r.source = std::string(s.rank);
    if (auto lv = get(s.local))
      if (auto local = strict_uint(*lv); local && *local < *size) r.local_rank = static_cast<int32_t>(*local);
    if (auto id = get("TORCHELASTIC_RUN_ID"); id && safe_job_id(*id)) {
      r.job_id = "torchelastic:" + std::string(*id);
    } else if (auto addr = get("MASTER_ADDR"), port = get("MASTER_PORT");
               addr && port && safe_job_id(*addr) && strict_uint(*port)) {
      r.job_id = "master:" + std::string(*addr) + ":" + std::string(*port);
    } else if (auto job = get("SLURM_JOB_ID"); job && strict_uint(*job)) {
      r.job_id = "slurm:" + std::string(*job);
      if (auto step = get("SLURM_STEP_ID"); step && strict_uint(*step)) r.job_id += "." + std::string(*step);
    }
    return r;
  }
  return std::nullopt;
}

std::optional<LauncherRank> read_launcher_rank(uint32_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/environ", std::ios::binary);
  if (!in) return std::nullopt;
  // Read as it comes, up to kMaxEnviron: the tracer reads this for every process it sees (on a
  // busy host, every compiler started), and zeroing a 1 MiB string up front each time was most
  // of the idle tracer's CPU (docs/BENCHMARKS.md "Fast calls counted in the kernel").
  std::string text;
  std::array<char, 16384> chunk{};
  while (text.size() < kMaxEnviron) {
    in.read(chunk.data(), static_cast<std::streamsize>(std::min(chunk.size(), kMaxEnviron - text.size())));
    const std::streamsize got = in.gcount();
    if (got <= 0) break;
    text.append(chunk.data(), static_cast<size_t>(got));
  }
  return launcher_rank_from_environ(text);
}

}  // namespace causeway::collector
