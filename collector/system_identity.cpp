#include "collector/system_identity.h"

#include <dirent.h>
#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "collector/clock.h"
#include "collector/proc_info.h"

namespace causeway::collector {
namespace {

using json = nlohmann::json;

std::string first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// "Key:   value" lines of /proc files.
std::string field(const std::string& path, std::string_view key) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.compare(0, key.size(), key) != 0) continue;
    size_t colon = line.find(':', key.size());
    if (colon == std::string::npos) continue;
    std::string v = line.substr(colon + 1);
    v.erase(0, v.find_first_not_of(" \t"));
    while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.pop_back();
    return v;
  }
  return {};
}

struct DlClose {
  void operator()(void* h) const { dlclose(h); }
};

// NVML's C API, only the calls used here (nvml.h: return 0 = NVML_SUCCESS).
struct NvmlMemory {
  unsigned long long total, free, used;
};

struct GpuScan {
  json gpus = json::array();
  std::string driver;  // "" = unknown
  std::string reason;  // why driver is null
  std::string source;  // nvml | procfs
};

bool scan_nvml(GpuScan& out) {
  std::unique_ptr<void, DlClose> lib(dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL));
  if (!lib) return false;
  auto sym = [&](const char* name) { return dlsym(lib.get(), name); };
  using InitFn = int (*)();
  using DriverFn = int (*)(char*, unsigned);
  using CountFn = int (*)(unsigned*);
  using HandleFn = int (*)(unsigned, void**);
  using TextFn = int (*)(void*, char*, unsigned);
  using MemFn = int (*)(void*, NvmlMemory*);
  auto init = reinterpret_cast<InitFn>(sym("nvmlInit_v2"));
  auto shutdown = reinterpret_cast<InitFn>(sym("nvmlShutdown"));
  auto driver = reinterpret_cast<DriverFn>(sym("nvmlSystemGetDriverVersion"));
  auto count = reinterpret_cast<CountFn>(sym("nvmlDeviceGetCount_v2"));
  auto handle = reinterpret_cast<HandleFn>(sym("nvmlDeviceGetHandleByIndex_v2"));
  auto name = reinterpret_cast<TextFn>(sym("nvmlDeviceGetName"));
  auto uuid = reinterpret_cast<TextFn>(sym("nvmlDeviceGetUUID"));
  auto mem = reinterpret_cast<MemFn>(sym("nvmlDeviceGetMemoryInfo"));
  if (!init || !shutdown || !driver || !count || !handle || !name || !uuid || !mem) return false;
  if (init() != 0) {
    out.reason = "libnvidia-ml.so.1 is present but nvmlInit failed (driver not loaded?)";
    return false;
  }
  char buf[96] = {};
  if (driver(buf, sizeof(buf)) == 0) out.driver = buf;
  unsigned n = 0;
  if (count(&n) == 0)
    for (unsigned i = 0; i < n; ++i) {
      void* h = nullptr;
      if (handle(i, &h) != 0) continue;
      json g = {{"index", i}};
      if (name(h, buf, sizeof(buf)) == 0) g["name"] = std::string(buf);
      if (uuid(h, buf, sizeof(buf)) == 0) g["uuid"] = std::string(buf);
      NvmlMemory m{};
      if (mem(h, &m) == 0) g["memory_mb"] = m.total / (1024 * 1024);
      out.gpus.push_back(std::move(g));
    }
  shutdown();
  out.source = "nvml";
  return true;
}

bool scan_procfs(GpuScan& out) {
  const std::string root = "/proc/driver/nvidia/gpus";
  std::unique_ptr<DIR, int (*)(DIR*)> dir(opendir(root.c_str()), closedir);
  if (!dir) return false;
  std::vector<std::string> buses;
  while (dirent* d = readdir(dir.get()))
    if (d->d_name[0] != '.') buses.emplace_back(d->d_name);
  std::sort(buses.begin(), buses.end());
  for (size_t i = 0; i < buses.size(); ++i) {
    const std::string info = root + "/" + buses[i] + "/information";
    json g = {{"index", i}, {"bus", buses[i]}};
    if (auto model = field(info, "Model"); !model.empty()) g["name"] = model;
    if (auto id = field(info, "GPU UUID"); !id.empty()) g["uuid"] = id;
    out.gpus.push_back(std::move(g));
  }
  std::string v = first_line("/proc/driver/nvidia/version");
  if (auto i = v.find("Kernel Module"); i != std::string::npos) {
    std::string rest = v.substr(i + 13);
    rest.erase(0, rest.find_first_not_of(' '));
    out.driver = rest.substr(0, rest.find(' '));
  }
  out.source = "procfs";
  return true;
}

GpuScan scan_gpus() {
  GpuScan s;
  if (scan_nvml(s) || scan_procfs(s)) return s;
  if (s.reason.empty())
    s.reason = "no NVIDIA driver (no libnvidia-ml.so.1, no /proc/driver/nvidia/gpus)";
  return s;
}

}  // namespace

json read_system_identity() {
  json sys;
  sys["hostname"] = host_name();
  sys["kernel"] = kernel_release();
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  sys["cpus"] = cpus > 0 ? cpus : 0;
  sys["cpu_model"] = field("/proc/cpuinfo", "model name");
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  sys["memory_mb"] = pages > 0 && page > 0 ? static_cast<int64_t>(pages) * page / (1024 * 1024) : 0;
  sys["boot_id"] = first_line("/proc/sys/kernel/random/boot_id");
  GpuScan g = scan_gpus();
  sys["gpus"] = g.gpus;
  if (g.driver.empty()) {
    sys["driver"] = nullptr;
    sys["driver_reason"] = g.reason.empty() ? "the NVIDIA driver reports no version" : g.reason;
  } else {
    sys["driver"] = g.driver;
  }
  if (!g.source.empty()) sys["gpu_source"] = g.source;
  sys["clock"] = {{"realtime_minus_monotonic_ns", measure_mono_to_real_offset()},
                  {"sync", "assumed NTP/PTP-synchronized; timestamps are CLOCK_REALTIME (Unix ns)"}};
  sys["synthetic"] = false;
  return sys;
}

void fill_system_identity(SessionInfo& info) {
  json sys = read_system_identity();
  info.host = sys["hostname"].get<std::string>();
  info.kernel = sys["kernel"].get<std::string>();
  info.driver_version = sys["driver"].is_string() ? sys["driver"].get<std::string>() : std::string();
  info.gpus = sys["gpus"].dump();
  info.boot_id = sys["boot_id"].get<std::string>();
  info.clock_offset_ns = sys["clock"]["realtime_minus_monotonic_ns"].get<int64_t>();
  info.system = sys.dump();
}

}  // namespace causeway::collector
