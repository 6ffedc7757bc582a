#include "collector/attacher.h"

#include <chrono>
#include <cstdio>
#include <optional>

#include "collector/elf_file.h"

namespace causeway::collector {

EntryPlan plan_entry(const std::vector<uint8_t>& code) {
  EntryPlan p;
  if (code.size() >= 4 && code[0] == 0xf3 && code[1] == 0x0f && code[2] == 0x1e && code[3] == 0xfa) p.skip = 4;
  if (code.size() < p.skip + 2) return p;
  const uint8_t b0 = code[p.skip], b1 = code[p.skip + 1];
  const bool push = (b0 >= 0x50 && b0 <= 0x57) || (b0 == 0x41 && b1 >= 0x50 && b1 <= 0x57);
  const bool nop = b0 == 0x90 || (b0 == 0x0f && b1 == 0x1f) || (b0 == 0x66 && b1 == 0x90);
  const bool branch = b0 == 0xe8 || b0 == 0xe9 || b0 == 0xeb;
  p.fast = push || nop || branch;
  return p;
}

Result<const AttachedLib*> Attacher::attach(const std::string& path, const std::string& display, LibKind kind,
                                            const LibOpenOptions& how) {
  if (how.expect && files_.count({how.expect->dev, how.expect->ino})) return static_cast<const AttachedLib*>(nullptr);
  auto opened = OpenedLib::open(path, how);
  if (!opened) return opened.error();
  const auto key = std::make_pair(opened->id().dev, opened->id().ino);
  if (files_.count(key)) return static_cast<const AttachedLib*>(nullptr);
  const auto& elf = opened->elf();
  files_.insert(key);
  if (how.expect) files_.insert({how.expect->dev, how.expect->ino});
  // The kernel resolves /proc/self/fd/N to the file we parsed, whatever the path leads to now.
  const std::string probe_path = opened->fd_path();

  AttachedLib lib{path, display, kind, elf->build_id(), 0, {}, {}};
  std::vector<UprobeSite> sites;
  for (const ProbeSpec& spec : probe_specs()) {
    if (spec.lib != kind) continue;
    auto sym = elf->find(spec.symbol);
    auto off = sym ? elf->vaddr_to_offset(sym->vaddr) : std::nullopt;
    if (!off) {
      lib.missing.emplace_back(spec.symbol);
      continue;
    }
    EntryPlan plan = plan_entry(opened->read_at(*off, 8));
    if (!plan.fast) {
      auto code = opened->read_at(*off + plan.skip, 3);
      char buf[64];
      std::snprintf(buf, sizeof(buf), " (first insn %02x %02x %02x: single-stepped)", code.size() > 0 ? code[0] : 0,
                    code.size() > 1 ? code[1] : 0, code.size() > 2 ? code[2] : 0);
      lib.slow.push_back(std::string(spec.symbol) + buf);
    }
    sites.push_back(UprobeSite{*off + plan.skip, spec.cookie});
  }
  // The return probes first: a return probe is a breakpoint at the entry too (it hijacks the
  // return address, so it skips endbr64 as well: the stack pointer is unchanged there), and
  // once it is in, every call whose entry is recorded also returns through cw_return. Entry
  // first left a window in which running threads recorded entries that never returned; each
  // left a frame behind (a tracer attaching to NCCL ranks mid-run under load lost every call
  // after four of them). Returns seen before the entry probe is in find no frame and are ignored.
  const auto t0 = std::chrono::steady_clock::now();
  std::string first_error;
  auto attach_pair = [&](const std::vector<UprobeSite>& s) {
    auto r = bpf_.attach_calls(probe_path, s);
    if (!r && first_error.empty()) first_error = r.error().message;
    return r.ok();
  };
  // With session or multi links, the whole library in one link or one pair; one site the
  // kernel refuses fails the whole link, and then (as with perf-event links) each site is
  // attached alone.
  if (bpf_.link_kind() != UprobeLinkKind::perf_event && sites.size() > 1 && attach_pair(sites)) {
    lib.probes = static_cast<int>(sites.size());
  } else {
    for (const UprobeSite& site : sites) lib.probes += attach_pair({site}) ? 1 : 0;
  }
  lib.attach_us =
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0).count();
  if (lib.probes == 0 && !first_error.empty()) return make_error("attach", first_error);
  libs_.push_back(std::move(lib));
  return &libs_.back();
}

}  // namespace causeway::collector
