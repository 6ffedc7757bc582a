#include "collector/mmap_watch.h"

#include <linux/perf_event.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace causeway::collector {

namespace {

// The fixed part of PERF_RECORD_MMAP2 (include/uapi/linux/perf_event.h), the file name after it.
struct Mmap2Head {
  perf_event_header header;
  uint32_t pid, tid;
  uint64_t addr, len, pgoff;
  uint32_t maj, min;
  uint64_t ino, ino_generation;
  uint32_t prot, flags;
};
static_assert(sizeof(Mmap2Head) == 72);

int open_mmap_event(int cpu) {
  perf_event_attr attr{};
  attr.size = sizeof(attr);
  attr.type = PERF_TYPE_SOFTWARE;
  attr.config = PERF_COUNT_SW_DUMMY;
  // mmap turns the records on (the kernel counts listeners by it), mmap2 gives them the
  // MMAP2 layout; mmap_data stays 0: executable mappings only.
  attr.mmap = 1;
  attr.mmap2 = 1;
  attr.sample_id_all = 0;
  attr.exclude_kernel = 1;
  // Nobody waits on the fd (the drain loop reads the head): wake as rarely as the kernel allows.
  attr.watermark = 1;
  attr.wakeup_watermark = 1u << 30;
  return static_cast<int>(::syscall(SYS_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC));
}

}  // namespace

std::optional<ExecMapping> decode_mmap2_record(const void* record, size_t size) {
  if (size < sizeof(Mmap2Head)) return std::nullopt;
  Mmap2Head h;
  std::memcpy(&h, record, sizeof(h));
  if (h.header.type != PERF_RECORD_MMAP2 || h.header.size > size || h.header.size <= sizeof(Mmap2Head)) return std::nullopt;
  const char* name = static_cast<const char*>(record) + sizeof(Mmap2Head);
  const size_t room = h.header.size - sizeof(Mmap2Head);  // the name, NUL-padded to 8 bytes
  return ExecMapping{h.pid, std::string(name, strnlen(name, room))};
}

Result<MmapWatch> MmapWatch::open(size_t pages_per_cpu) {
  const long page = ::sysconf(_SC_PAGESIZE);
  const long ncpus = ::sysconf(_SC_NPROCESSORS_CONF);
  MmapWatch w;
  std::string why;
  for (int cpu = 0; cpu < ncpus; ++cpu) {
    UniqueFd fd(open_mmap_event(cpu));
    if (!fd) {
      // An offline CPU (ENODEV) has nothing to report; anything else means no watch at all.
      if (errno == ENODEV) continue;
      return Error{"perf_event", std::string("perf_event_open on CPU ") + std::to_string(cpu) + ": " + std::strerror(errno)};
    }
    Ring r;
    r.map_bytes = static_cast<size_t>(page) * (1 + pages_per_cpu);
    r.base = ::mmap(nullptr, r.map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
    if (r.base == MAP_FAILED)
      return Error{"perf_event", std::string("mapping the perf ring of CPU ") + std::to_string(cpu) + ": " + std::strerror(errno)};
    r.fd = std::move(fd);
    w.rings_.push_back(std::move(r));
  }
  if (w.rings_.empty()) return Error{"perf_event", "no online CPU took a perf event"};
  return w;
}

MmapWatch::MmapWatch(MmapWatch&& o) noexcept
    : rings_(std::move(o.rings_)), scratch_(std::move(o.scratch_)), seen_(o.seen_), lost_(o.lost_) {
  o.rings_.clear();
}

MmapWatch& MmapWatch::operator=(MmapWatch&& o) noexcept {
  if (this != &o) {
    for (Ring& r : rings_) ::munmap(r.base, r.map_bytes);
    rings_ = std::move(o.rings_);
    o.rings_.clear();
    scratch_ = std::move(o.scratch_);
    seen_ = o.seen_;
    lost_ = o.lost_;
  }
  return *this;
}

MmapWatch::~MmapWatch() {
  for (Ring& r : rings_) ::munmap(r.base, r.map_bytes);
}

std::vector<ExecMapping> MmapWatch::take(const std::function<bool(std::string_view)>& want) {
  std::vector<ExecMapping> out;
  for (Ring& r : rings_) read_ring(r, want, out);
  return out;
}

void MmapWatch::read_ring(Ring& r, const std::function<bool(std::string_view)>& want, std::vector<ExecMapping>& out) {
  auto* meta = static_cast<perf_event_mmap_page*>(r.base);
  const uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
  uint64_t tail = meta->data_tail;
  if (head == tail) return;
  const auto* data = static_cast<const unsigned char*>(r.base) + meta->data_offset;
  const uint64_t size = meta->data_size;
  while (tail < head) {
    perf_event_header h;
    // The header itself may wrap: copy it byte-wise from the ring.
    for (size_t i = 0; i < sizeof(h); ++i) reinterpret_cast<unsigned char*>(&h)[i] = data[(tail + i) % size];
    if (h.size < sizeof(h) || h.size > head - tail) break;  // torn: leave it (cannot happen with a sane kernel)
    const uint64_t at = tail % size;
    const unsigned char* rec = data + at;
    if (at + h.size > size) {  // wraps: made whole in scratch_
      scratch_.resize(h.size);
      const size_t first = size - at;
      std::memcpy(scratch_.data(), data + at, first);
      std::memcpy(scratch_.data() + first, data, h.size - first);
      rec = scratch_.data();
    }
    if (h.type == PERF_RECORD_LOST && h.size >= sizeof(h) + 16) {
      uint64_t lost;
      std::memcpy(&lost, rec + sizeof(h) + 8, sizeof(lost));  // after the event id
      lost_ += lost;
    } else if (auto m = decode_mmap2_record(rec, h.size)) {
      ++seen_;
      if (want(m->path)) out.push_back(std::move(*m));
    }
    tail += h.size;
  }
  __atomic_store_n(&meta->data_tail, tail, __ATOMIC_RELEASE);
}

}  // namespace causeway::collector
