// The meaning of the generic args a0..a5 of each op layout (the op table's `arg_names`,
// tracedb/op_catalog.cpp) and typed views over them: `launch_args(e).stream`,
// `coll_args(e).comm`. A view reads the slot its field has in the layout string, found at
// compile time, so code that reads an event's args names the field instead of a position.
// A view works on any row with an `a` array of int64 (the correlator's events, decoded records).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "tracedb/event_columns.h"

namespace causeway {

namespace arg_layout {
inline constexpr std::string_view alloc = "bytes,device_ptr";
inline constexpr std::string_view free_ = ",device_ptr";
inline constexpr std::string_view copy = "bytes,dst_ptr,copy_kind,stream";
inline constexpr std::string_view memset = "bytes,device_ptr,,stream";
inline constexpr std::string_view launch = ",function,,stream,grid_packed,block_packed";
inline constexpr std::string_view stream = ",,,stream";
inline constexpr std::string_view coll = "count,comm_hash,rank,nranks,seq,datatype|redop<<8|peer<<16";
// CUDA graphs: a1 is the graph exec (instantiate → launch → destroy), a2 the graph (capture
// end → instantiate), so both hand-overs join on one column.
inline constexpr std::string_view capture_begin = "capture_mode,,,stream";
inline constexpr std::string_view capture_end = ",,graph,stream";
inline constexpr std::string_view instantiate = ",graph_exec,graph";
inline constexpr std::string_view graph_launch = ",graph_exec,,stream";
inline constexpr std::string_view graph_exec = ",graph_exec";
inline constexpr std::string_view block = "bytes,dev,sector,is_write";
inline constexpr std::string_view tcp = "saddr,sport,daddr,dport,state,sock_owner";
inline constexpr std::string_view tcp6 = "saddr_hi,saddr_lo,daddr_hi,daddr_lo,sport|dport<<16|state<<32,sock_owner";
inline constexpr std::string_view page_alloc = "pages,max_order";
inline constexpr std::string_view oom_kill = "victim_pid,total_pages";
inline constexpr std::string_view send_wait = "fd,eagain,short_writes,blocking";
// A thread's run of fast calls counted in the kernel (CW_OP_CALLS_AGGREGATED, tracedb/op_recording.h).
inline constexpr std::string_view calls_aggregated = "calls,calls_ns,last_op";
}  // namespace arg_layout

// The slot (0..5) of field `name` in a comma-separated layout; -1 when it has none.
constexpr int arg_slot(std::string_view layout, std::string_view name) {
  int slot = 0;
  size_t from = 0;
  while (true) {
    const size_t comma = layout.find(',', from);
    const std::string_view field = layout.substr(from, comma == std::string_view::npos ? std::string_view::npos : comma - from);
    if (field == name) return slot;
    if (comma == std::string_view::npos) return -1;
    from = comma + 1;
    ++slot;
  }
}

// The slot of `name` in every listed layout (they must agree: one view serves them all).
template <typename... L>
constexpr int common_slot(std::string_view name, L... layouts) {
  const int slots[] = {arg_slot(layouts, name)...};
  for (int s : slots)
    if (s != slots[0]) return -1;
  return slots[0];
}

// A slot known to exist (a compile error otherwise: the layout lost the field).
template <int S>
constexpr int checked_slot() {
  static_assert(S >= 0 && S < 6, "the field is not in the layout (tracedb/op_args.h)");
  return S;
}
#define CW_ARG(R, NAME, ...) (R).a[checked_slot<common_slot(NAME, __VA_ARGS__)>()]

// The `events` column holding a field, for SQL: CW_ARG_COLUMN("stream", arg_layout::stream) is
// "a3". SQL names a field this way, never by its position.
#define CW_ARG_COLUMN(NAME, ...) \
  std::string(col_name(static_cast<EventCol>(arg_col(checked_slot<common_slot(NAME, __VA_ARGS__)>()))))

// Kernel launches.
struct LaunchArgs {
  int64_t function = 0, stream = 0;
};
template <typename R>
LaunchArgs launch_args(const R& r) {
  return {CW_ARG(r, "function", arg_layout::launch), CW_ARG(r, "stream", arg_layout::launch)};
}

// What a GPU submission runs on, one slot across launches (the kernel function), graph
// launches (the exec), copies and memsets (the destination): distinct values are distinct work.
template <typename R>
int64_t submit_target(const R& r) {
  static_assert(common_slot("function", arg_layout::launch) == common_slot("graph_exec", arg_layout::graph_launch) &&
                common_slot("graph_exec", arg_layout::graph_launch) == common_slot("dst_ptr", arg_layout::copy) &&
                common_slot("dst_ptr", arg_layout::copy) == common_slot("device_ptr", arg_layout::memset));
  return CW_ARG(r, "function", arg_layout::launch);
}

// NCCL collectives and p2p calls: matched across ranks by (comm, seq).
struct CollArgs {
  int64_t count = 0, comm = 0;
  int32_t rank = -1, nranks = 0;
  int64_t seq = 0;
  int64_t datatype = 0;  // ncclDataType_t: the low byte of the last slot (redop and peer above it)
};
template <typename R>
CollArgs coll_args(const R& r) {
  using namespace arg_layout;
  return {CW_ARG(r, "count", coll), CW_ARG(r, "comm_hash", coll), static_cast<int32_t>(CW_ARG(r, "rank", coll)),
          static_cast<int32_t>(CW_ARG(r, "nranks", coll)), CW_ARG(r, "seq", coll),
          CW_ARG(r, "datatype|redop<<8|peer<<16", coll) & 255};
}

// A run of calls counted in the kernel: how many, their time inside the calls, the op of the last.
struct CountedRunArgs {
  int64_t calls = 0, calls_ns = 0;
  uint16_t last_op = 0;
};
template <typename R>
CountedRunArgs counted_run_args(const R& r) {
  using namespace arg_layout;
  return {CW_ARG(r, "calls", calls_aggregated), CW_ARG(r, "calls_ns", calls_aggregated),
          static_cast<uint16_t>(CW_ARG(r, "last_op", calls_aggregated))};
}

// Memory copies (kind: 0 HtoH, 1 HtoD, 2 DtoH, 3 DtoD, 4 default).
struct CopyArgs {
  int64_t bytes = 0, dst = 0, kind = 0, stream = 0;
};
template <typename R>
CopyArgs copy_args(const R& r) {
  using namespace arg_layout;
  return {CW_ARG(r, "bytes", copy), CW_ARG(r, "dst_ptr", copy), CW_ARG(r, "copy_kind", copy), CW_ARG(r, "stream", copy)};
}

// CUDA graph capture, instantiation and launch: the exec, the graph and the stream share their
// slots across those layouts.
struct GraphArgs {
  int64_t exec = 0, graph = 0, stream = 0;
};
template <typename R>
GraphArgs graph_args(const R& r) {
  using namespace arg_layout;
  return {CW_ARG(r, "graph_exec", instantiate, graph_launch, graph_exec), CW_ARG(r, "graph", capture_end, instantiate),
          CW_ARG(r, "stream", capture_begin, capture_end, graph_launch)};
}

// Block I/O requests. dev is the kernel's dev_t (major << 20 | minor).
struct BlockArgs {
  int64_t bytes = 0, dev = 0, sector = 0;
  bool is_write = false;
  int64_t dev_major() const { return dev >> 20; }
  int64_t dev_minor() const { return dev & 0xFFFFF; }
};
template <typename R>
BlockArgs block_args(const R& r) {
  using namespace arg_layout;
  return {CW_ARG(r, "bytes", block), CW_ARG(r, "dev", block), CW_ARG(r, "sector", block), CW_ARG(r, "is_write", block) != 0};
}

// Page allocations that stalled (direct reclaim, faults).
struct PageAllocArgs {
  int64_t pages = 0, max_order = 0;
};
template <typename R>
PageAllocArgs page_alloc_args(const R& r) {
  return {CW_ARG(r, "pages", arg_layout::page_alloc), CW_ARG(r, "max_order", arg_layout::page_alloc)};
}

// OOM kills: the process the kernel ended.
struct OomKillArgs {
  int64_t victim_pid = 0, total_pages = 0;
};
template <typename R>
OomKillArgs oom_kill_args(const R& r) {
  return {CW_ARG(r, "victim_pid", arg_layout::oom_kill), CW_ARG(r, "total_pages", arg_layout::oom_kill)};
}

// A served connection's full send buffer (requests/send_waits.h): the socket, its EAGAIN
// returns and short writes, and whether the write blocked.
struct SendWaitArgs {
  int64_t fd = 0, eagain = 0, short_writes = 0;
  bool blocking = false;
};
template <typename R>
SendWaitArgs send_wait_args(const R& r) {
  using namespace arg_layout;
  return {CW_ARG(r, "fd", send_wait), CW_ARG(r, "eagain", send_wait), CW_ARG(r, "short_writes", send_wait),
          CW_ARG(r, "blocking", send_wait) != 0};
}

// TCP retransmits: IPv4 addresses whole, IPv6 as two halves; ports unpacked. sock_owner: the
// collector matched the pid to the socket's owner (else it is the task running at the
// retransmit, which the kernel sends from a timer).
struct TcpArgs {
  int64_t saddr_hi = 0, saddr = 0, daddr_hi = 0, daddr = 0;  // *_hi: IPv6 only
  int64_t sport = 0, dport = 0;
  bool sock_owner = false;
};
template <typename R>
TcpArgs tcp_args(const R& r) {
  using namespace arg_layout;
  return {0, CW_ARG(r, "saddr", tcp), 0, CW_ARG(r, "daddr", tcp), CW_ARG(r, "sport", tcp), CW_ARG(r, "dport", tcp),
          CW_ARG(r, "sock_owner", tcp) != 0};
}
template <typename R>
TcpArgs tcp6_args(const R& r) {
  using namespace arg_layout;
  const int64_t ports = CW_ARG(r, "sport|dport<<16|state<<32", tcp6);
  return {CW_ARG(r, "saddr_hi", tcp6), CW_ARG(r, "saddr_lo", tcp6), CW_ARG(r, "daddr_hi", tcp6), CW_ARG(r, "daddr_lo", tcp6),
          ports & 0xffff, (ports >> 16) & 0xffff, CW_ARG(r, "sock_owner", tcp6) != 0};
}

#undef CW_ARG

}  // namespace causeway
