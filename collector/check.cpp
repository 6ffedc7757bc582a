#include "collector/check.h"


#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "collector/bpf_loader.h"
#include "common/fs_user.h"
#include "collector/discovery.h"
#include "collector/probe_table.h"
#include "collector/proc_maps.h"
#include "collector/python_runtime.h"
#include "collector/selftest_target.h"
#include "collector/tls_servers.h"

namespace causeway::collector {
namespace fs = std::filesystem;

namespace {

CheckItem pass(std::string name, std::string detail) { return {std::move(name), "PASS", std::move(detail), ""}; }
CheckItem warn(std::string name, std::string detail, std::string remedy) {
  return {std::move(name), "WARN", std::move(detail), std::move(remedy)};
}
CheckItem fail(std::string name, std::string detail, std::string remedy) {
  return {std::move(name), "FAIL", std::move(detail), std::move(remedy)};
}

bool kernel_at_least(int want_major, int want_minor, std::string& release) {
  struct utsname u {};
  ::uname(&u);
  release = u.release;
  int major = 0, minor = 0;
  std::sscanf(u.release, "%d.%d", &major, &minor);
  return major > want_major || (major == want_major && minor >= want_minor);
}

uint64_t effective_caps() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("CapEff:", 0) == 0) return std::strtoull(line.c_str() + 7, nullptr, 16);
  return 0;
}

std::string first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// Python frames: which interpreters of the running CUDA processes are read, and which are not
// (a version outside the offset table is never read with guessed offsets).
std::optional<CheckItem> python_check(const std::set<uint32_t>& pids) {
  std::string ok, bad;
  for (uint32_t pid : pids) {
    const PyProcess p = detect_python(pid, read_maps(pid));
    if (p.status == PyStatus::supported)
      ok += (ok.empty() ? "" : "; ") + ("pid " + std::to_string(pid) + " CPython " + p.version);
    else if (p.status == PyStatus::unsupported)
      bad += (bad.empty() ? "" : "; ") + ("pid " + std::to_string(pid) + ": " + p.why);
  }
  if (!bad.empty())
    return warn("python", "Python frames not recorded for " + bad + (ok.empty() ? "" : " (recorded for " + ok + ")"),
                "run the job on CPython 3.10-3.13; its native frames and calls are traced either way");
  if (!ok.empty()) return pass("python", "Python frames recorded for " + ok);
  return std::nullopt;
}

}  // namespace

std::string version_from_file_name(const std::string& path) {
  std::string name(base_name(path));
  auto i = name.find(".so.");
  return i == std::string::npos ? std::string() : name.substr(i + 4);
}

std::vector<std::string> find_library_files() {
  std::set<std::string> out;
  auto consider = [&](const fs::path& p) {
    std::error_code ec;
    if (!lib_kind_of(p.filename().string()) || !fs::is_regular_file(p, ec)) return;
    out.insert(fs::canonical(p, ec).string());
  };
  auto scan_dir = [&](const fs::path& dir) {
    std::error_code ec;
    for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec))
      consider(it->path());
  };
  if (FILE* p = ::popen("ldconfig -p 2>/dev/null", "r")) {
    char buf[1024];
    while (std::fgets(buf, sizeof(buf), p)) {
      std::string line(buf);
      auto arrow = line.find("=> ");
      if (arrow == std::string::npos) continue;
      std::string path = line.substr(arrow + 3);
      while (!path.empty() && (path.back() == '\n' || path.back() == ' ')) path.pop_back();
      consider(path);
    }
    ::pclose(p);
  }
  std::vector<std::string> dirs;
  if (const char* lp = std::getenv("LD_LIBRARY_PATH")) {
    std::stringstream ss(lp);
    std::string d;
    while (std::getline(ss, d, ':'))
      if (!d.empty()) dirs.push_back(d);
  }
  for (const char* env : {"CUDA_HOME", "CUDA_PATH"})
    if (const char* v = std::getenv(env)) {
      dirs.push_back(std::string(v) + "/lib64");
      dirs.push_back(std::string(v) + "/lib");
    }
  dirs.push_back("/usr/local/cuda/lib64");  // the toolkit's conventional install location
  dirs.push_back("/usr/local/cuda/lib");
  for (const auto& d : dirs) scan_dir(d);
  return {out.begin(), out.end()};
}

namespace {

// Request tracing's hooks (collector/sock_hook.h): the libc hook tried on this process (its
// libc's socket functions, probed with our own pid, then detached), and the tracepoint hook
// that servers without a libc get, attached here with no server in its filter: the raw
// fallback is a warning, since then every syscall on the host pays for it.
CheckItem sock_hook_item(BpfObject& bpf) {
  auto choice = bpf.sock_choice();
  if (!choice)
    return warn("http_syscalls", "HTTP request tracing cannot attach: " + choice.error().message,
                "requests are not traced; the rest of the trace is unaffected");
  std::string what;
  if (choice->libc) {
    const uint32_t self = static_cast<uint32_t>(::getpid());
    auto libc = bpf.trace_server(self);
    const size_t links = bpf.sock_libc_links();
    bpf.untrace_server(self);
    if (!libc || *libc != SockHook::libc)
      return warn("http_syscalls",
                  "libc hook: " + (libc ? std::string("this process's libc could not be probed") : libc.error().message),
                  "servers are traced through the syscall tracepoints instead (their cost: docs/BENCHMARKS.md)");
    what = std::string(sock_hook_name(SockHook::libc)) + ", " + std::to_string(links) + " links per server (" +
           choice->why + ")";
  }
  auto r = bpf.attach_sock_tracepoints();
  if (!r)
    return warn("http_syscalls", (what.empty() ? "" : what + "; ") + "tracepoint hook cannot attach: " + r.error().message,
                choice->libc ? "servers without a dynamically linked libc are not traced"
                             : "requests are not traced; the rest of the trace is unaffected");
  what += std::string(what.empty() ? "" : "; servers without a dynamically linked libc: ") +
          sock_hook_name(bpf.sock_tracepoint_hook()) + ", " + std::to_string(bpf.sock_links()) + " links" +
          (choice->libc || choice->why.empty() ? "" : " (" + choice->why + ")");
  if (bpf.sock_tracepoint_hook() == SockHook::syscalls) return pass("http_syscalls", what);
  const bool forced = bpf.sock_why_raw().rfind("CAUSEWAY_SOCK_HOOK", 0) == 0;
  return warn("http_syscalls", what + ": " + bpf.sock_why_raw(),
              std::string("while a server is traced on it every syscall on the host runs the filter (its cost: "
                          "docs/BENCHMARKS.md); ") +
                  (forced ? "unset CAUSEWAY_SOCK_HOOK"
                          : "mount tracefs (mount -t tracefs nodev /sys/kernel/tracing) on a kernel with "
                            "CONFIG_FTRACE_SYSCALLS"));
}

// TLS plaintext (bpf/ssl.bpf.h, docs/INFERENCE.md "TLS"): the hook attached to this
// process's own libssl (causeway maps the system OpenSSL), with our pid, then detached; a
// server mapping that libssl gets the same probes.
CheckItem tls_item(BpfObject& bpf) {
  const uint32_t self = static_cast<uint32_t>(::getpid());
  auto t = bpf.trace_server_tls(self);
  const size_t links = bpf.ssl_links();
  bpf.untrace_server(self);
  const std::string counted = "TLS linked into an executable (Node's bundled OpenSSL, Go, rustls) is counted "
                              "(http_tls_connections), not read";
  if (!t) return warn("tls", "TLS plaintext hook cannot attach: " + t.error().message, counted + "; so is all TLS here");
  if (t->reach != TlsReach::libssl)
    return warn("tls", t->text, "servers mapping an OpenSSL 3 libssl.so.3 have their TLS read; " + counted);
  return pass("tls", t->text + ", " + std::to_string(links) + " links per server that maps it; " + counted);
}

// Each listening server's TLS (collector/tls_servers.h): readable through its libssl, or
// counted only. Informational: a server whose TLS is only counted still has its plain HTTP
// and its connections traced.
CheckItem tls_servers_item() {
  const auto servers = tls_servers_on_host(static_cast<uint32_t>(::getpid()));
  const bool counted_only = std::any_of(servers.begin(), servers.end(),
                                        [](const TlsServer& s) { return s.tls.reach == TlsReach::in_executable; });
  const std::string text = tls_servers_text(servers, 32);
  if (!counted_only) return pass("tls_servers", text);
  return warn("tls_servers", text,
              "TLS linked into an executable is counted (http_tls_connections), not read; a server on the system "
              "OpenSSL (libssl.so.3) has its requests read, or trace its plain-HTTP port behind the TLS proxy");
}

// The kernel, its BTF and our privileges.
void check_host_items(std::vector<CheckItem>& items) {
  std::string release;
  if (kernel_at_least(5, 15, release)) items.push_back(pass("kernel", "Linux " + release));
  else
    items.push_back(fail("kernel", "Linux " + release + " is older than 5.15 (BPF cookies, task storage in uprobes)",
                         "run on a 5.15+ kernel"));

  if (::access("/sys/kernel/btf/vmlinux", R_OK) == 0) items.push_back(pass("btf", "/sys/kernel/btf/vmlinux present"));
  else items.push_back(fail("btf", "kernel BTF missing", "use a kernel built with CONFIG_DEBUG_INFO_BTF=y"));

  const uint64_t caps = effective_caps();
  const bool root = ::geteuid() == 0;
  const bool cap_bpf = caps & (1ull << 39), cap_perfmon = caps & (1ull << 38), cap_admin = caps & (1ull << 21);
  if (root || cap_admin || (cap_bpf && cap_perfmon))
    items.push_back(pass("privileges", root ? "running as root" : "CAP_BPF and CAP_PERFMON"));
  else
    items.push_back(fail("privileges", "neither root nor CAP_BPF+CAP_PERFMON",
                         "run with sudo, or: sudo setcap cap_bpf,cap_perfmon,cap_sys_resource+ep $(command -v causeway)"));

}

// The BPF object: loaded, its tracepoints, a uprobe on ourselves, the HTTP and TLS hooks.
void check_bpf_items(std::vector<CheckItem>& items) {
  set_libbpf_quiet(true);
  auto bpf = BpfObject::load(LoaderOptions{});
  if (!bpf) {
    items.push_back(fail("bpf_load", bpf.error().message, "see the privileges and btf items above"));
  } else {
    items.push_back(pass("bpf_load", "causeway BPF programs loaded (verifier accepted them)"));
    auto failed = (*bpf)->attach_tracepoints();
    if (failed.empty()) items.push_back(pass("tracepoints", "sched, process, block, tcp, mm and oom raw tracepoints attach"));
    else {
      std::string list;
      for (const auto& f : failed) list += (list.empty() ? "" : ", ") + f;
      items.push_back(warn("tracepoints", "not attached: " + list,
                           "host context for those events will be missing; other events are unaffected"));
    }
    auto loc = selftest_call_location();
    Result<void> up = loc ? (*bpf)->attach_call(loc->binary, loc->offset, 0) : Result<void>(loc.error());
    if (up) items.push_back(pass("uprobes", std::string("uprobe and uretprobe attach: ") + link_kind_name((*bpf)->link_kind())));
    else
      items.push_back(fail("uprobes", up.error().message,
                           "the kernel needs CONFIG_UPROBES; in containers, run privileged with the host PID namespace"));
    items.push_back(sock_hook_item(**bpf));
    items.push_back(tls_item(**bpf));
    items.push_back(tls_servers_item());
  }

}

void check_tracefs_item(std::vector<CheckItem>& items) {
  struct statfs sf {};
  if (::statfs("/sys/kernel/tracing", &sf) == 0 && sf.f_type == 0x74726163 /* TRACEFS_MAGIC */)
    items.push_back(pass("tracefs", "mounted at /sys/kernel/tracing"));
  else
    items.push_back(warn("tracefs",
                         "not mounted (host tracepoints attach without it; HTTP request tracing then falls back to the "
                         "raw sys_enter/sys_exit, see http_syscalls)",
                         "mount -t tracefs nodev /sys/kernel/tracing"));

}

// Libraries: in running processes and on disk.
void check_library_items(const std::vector<FoundLib>& running, std::vector<CheckItem>& items) {
  std::map<std::string, std::string> libs;  // path → version
  for (const auto& f : running) libs[f.path] = version_from_file_name(f.path);
  for (const auto& p : find_library_files()) libs.emplace(p, version_from_file_name(p));
  std::set<LibKind> kinds;
  std::string lib_detail;
  for (const auto& [path, version] : libs) {
    kinds.insert(*lib_kind_of(base_name(path)));
    lib_detail += (lib_detail.empty() ? "" : "; ") + path + (version.empty() ? "" : " (" + version + ")");
  }
  if (kinds.count(LibKind::cudart) || kinds.count(LibKind::nccl)) items.push_back(pass("libraries", lib_detail));
  else
    items.push_back(warn("libraries", lib_detail.empty() ? "no libcudart/libcuda/libnccl found" : lib_detail,
                         "they are found in running processes automatically; otherwise pass --lib PATH to trace"));

}

void check_gpu_item(std::vector<CheckItem>& items) {
  std::string driver = first_line("/proc/driver/nvidia/version");
  if (!driver.empty()) {
    int gpus = 0;
    std::error_code ec;
    for (auto it = fs::directory_iterator("/proc/driver/nvidia/gpus", ec); !ec && it != fs::directory_iterator();
         it.increment(ec))
      ++gpus;
    items.push_back(pass("gpu", std::to_string(gpus) + " GPU(s); " + driver));
  } else {
    items.push_back(warn("gpu", "no NVIDIA driver loaded",
                         "tracing still works (CUDA calls fail fast without a driver); install the driver to run GPU jobs"));
  }

}

void check_process_items(const std::vector<FoundLib>& running, std::vector<CheckItem>& items) {
  std::set<uint32_t> pids;
  for (const auto& f : running) pids.insert(f.pid);
  std::string plist;
  for (uint32_t p : pids) plist += (plist.empty() ? "" : ", ") + std::to_string(p);
  items.push_back(pass("cuda_processes", pids.empty() ? "none running now (trace attaches when one starts)"
                                                      : std::to_string(pids.size()) + " running: pid " + plist));
  if (auto py = python_check(pids)) items.push_back(std::move(*py));

}

// Where trace would write its DB, as the user it writes as.
void check_db_item(const std::string& db_path, std::vector<CheckItem>& items) {
  // Probe without creating anything: under sudo a folder made here would belong to root.
  fs::path dir = fs::path(db_path).parent_path();
  if (dir.empty()) dir = ".";
  struct stat st {};
  while (::stat(dir.c_str(), &st) != 0 && dir.has_parent_path() && dir != dir.parent_path()) dir = dir.parent_path();
  auto as = write_identity_for(db_path);
  if (!as) {
    items.push_back(fail("db", as.error().message, "pass --db PATH of your own, or set CAUSEWAY_DB"));
    return;
  }
  const std::string owner = *as ? " (files owned by " + (*as)->name + ")" : "";
  const uid_t expected = *as ? (*as)->uid : ::geteuid();
  // Looked at as the user trace writes as: root's override of permissions does not count.
  auto scope = AsFsUser::enter(*as);
  if (::lstat(db_path.c_str(), &st) == 0 && (!S_ISREG(st.st_mode) || st.st_nlink != 1))
    items.push_back(fail("db", db_path + " is a symbolic link, not a regular file, or has other hard links; trace "
                                         "refuses to write it",
                         "pass --db PATH of a plain file, or set CAUSEWAY_DB"));
  else if (::lstat(db_path.c_str(), &st) == 0 && st.st_uid != expected)
    items.push_back(fail("db", db_path + " belongs to another user; trace refuses to write into it",
                         "pass --db PATH of your own, or set CAUSEWAY_DB"));
  else if (scope && ::faccessat(AT_FDCWD, dir.c_str(), W_OK, AT_EACCESS) == 0)
    items.push_back(pass("db", "trace writes " + db_path + owner));
  else
    items.push_back(fail("db", "cannot write in " + dir.string() + owner, "pass --db PATH in a writable folder, or set CAUSEWAY_DB"));
}

}  // namespace

std::vector<CheckItem> run_checks(const std::string& db_path) {
  std::vector<CheckItem> items;
  check_host_items(items);
  check_bpf_items(items);
  check_tracefs_item(items);
  const auto running = scan_all();
  check_library_items(running, items);
  check_gpu_item(items);
  check_process_items(running, items);
  check_db_item(db_path, items);
  return items;
}

bool checks_ready(const std::vector<CheckItem>& items) {
  for (const auto& i : items)
    if (i.status == "FAIL") return false;
  return true;
}

nlohmann::ordered_json checks_to_json(const std::vector<CheckItem>& items) {
  nlohmann::ordered_json arr = nlohmann::ordered_json::array();
  for (const auto& i : items)
    arr.push_back({{"name", i.name}, {"status", i.status}, {"detail", i.detail}, {"remedy", i.remedy}});
  return {{"ready", checks_ready(items)}, {"checks", arr}};
}

}  // namespace causeway::collector
