// Decoding of ring-buffer records into writer records: every argument layout of the op
// catalog, from registers and stack words as the BPF side copies them.
#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "tracedb/op_recording.h"
#include "bpf/events.h"
#include "collector/decode.h"
#include "collector/probe_table.h"
#include "collector/sock_decode.h"
#include "collector/sock_drain.h"
#include "tracedb/op_catalog.h"

using namespace causeway;
using namespace causeway::collector;

namespace {

cw_call_event call(uint16_t op, uint8_t dclass, uint8_t aux = 0) {
  cw_call_event e;
  std::memset(&e, 0, sizeof(e));
  e.hdr.ts_ns = 1000;
  e.hdr.pid = 42;
  e.hdr.tid = 43;
  e.hdr.cpu = 1;
  e.hdr.op = op;
  e.hdr.kind = CW_REC_CALL;
  e.dur_ns = 500;
  e.dclass = dclass;
  e.aux = aux;
  e.stack_id = -1;
  return e;
}

}  // namespace

TEST_CASE("allocation: bytes and the pointer written through the out argument") {
  auto e = call(CW_OP_CUDA_MALLOC, CW_DC_ALLOC);
  e.regs[0] = 0x7ffd0000;  // &ptr
  e.regs[1] = 1 << 20;
  e.extra[CW_X_OUT] = 0x7f0000000000;
  e.ret = 0;
  CallRecord c = decode_call(e);
  CHECK(c.a[0] == 1 << 20);
  CHECK(c.a[1] == 0x7f0000000000);
  CHECK(c.ts_ns == 1000);
  CHECK(c.dur_ns == 500);
  CHECK(c.pid == 42);
  CHECK(c.tid == 43);
  CHECK(c.op == CW_OP_CUDA_MALLOC);
}

TEST_CASE("copies: bytes, dst, kind, stream only for async variants") {
  auto e = call(CW_OP_CUDA_MEMCPY_ASYNC, CW_DC_COPY, CW_AUX_STREAM);
  e.regs[0] = 0xd000;
  e.regs[1] = 0x5000;
  e.regs[2] = 4096;
  e.regs[3] = 1;
  e.regs[4] = 0x1234;
  auto a = decode_call_args(e);
  CHECK(a[0] == 4096);
  CHECK(a[1] == 0xd000);
  CHECK(a[2] == 1);
  CHECK(a[3] == 0x1234);
  e.aux = 0;  // cudaMemcpy: r8 is garbage, not a stream
  CHECK(decode_call_args(e)[3] == 0);

  auto d2 = call(CW_OP_CUDA_MEMCPY_2D_ASYNC, CW_DC_COPY_2D, CW_AUX_STREAM);
  d2.regs[0] = 0xd000;
  d2.regs[4] = 64;  // width
  d2.regs[5] = 16;  // height
  d2.extra[0] = 2;  // kind (stack)
  d2.extra[1] = 0x99;
  a = decode_call_args(d2);
  CHECK(a[0] == 1024);
  CHECK(a[2] == 2);
  CHECK(a[3] == 0x99);

  auto drv = call(CW_OP_CU_MEMCPY_DTOH_ASYNC, CW_DC_DRV_COPY, 2 | CW_AUX_STREAM);
  drv.regs[0] = 0xa;
  drv.regs[2] = 77;
  drv.regs[3] = 0x55;
  a = decode_call_args(drv);
  CHECK(a[0] == 77);
  CHECK(a[1] == 0xa);
  CHECK(a[2] == 2);
  CHECK(a[3] == 0x55);
}

TEST_CASE("runtime launch: dim3 by value in register pairs, stream on the stack") {
  auto e = call(CW_OP_CUDA_LAUNCH_KERNEL, CW_DC_LAUNCH_RT, CW_AUX_STREAM);
  e.regs[0] = 0xdead0000;
  e.regs[1] = 4 | (uint64_t{2} << 32);  // grid x, y
  e.regs[2] = 1;                         // grid z
  e.regs[3] = 128 | (uint64_t{1} << 32);
  e.regs[4] = 1;
  e.extra[0] = 0;       // sharedMem
  e.extra[1] = 0x1001;  // stream
  auto a = decode_call_args(e);
  CHECK(a[1] == 0xdead0000);
  CHECK(a[3] == 0x1001);
  CHECK(a[4] == pack_dim3(4, 2, 1));
  CHECK(a[5] == pack_dim3(128, 1, 1));
  CHECK(pack_dim3(4, 2, 1) == (4 | (2ll << 21) | (1ll << 42)));
}

TEST_CASE("config-struct launches (cudaLaunchKernelExC, cuLaunchKernelEx)") {
  auto e = call(CW_OP_CUDA_LAUNCH_KERNEL_EXC, CW_DC_LAUNCH_RT_EXC, CW_AUX_STREAM);
  uint32_t dims[6] = {8, 4, 2, 256, 2, 1};
  std::memcpy(e.extra, dims, sizeof(dims));
  uint64_t stream = 0x77;
  std::memcpy(reinterpret_cast<uint8_t*>(e.extra) + 32, &stream, 8);
  e.regs[1] = 0xf00;
  auto a = decode_call_args(e);
  CHECK(a[1] == 0xf00);
  CHECK(a[3] == 0x77);
  CHECK(a[4] == pack_dim3(8, 4, 2));
  CHECK(a[5] == pack_dim3(256, 2, 1));

  auto d = call(CW_OP_CU_LAUNCH_KERNEL, CW_DC_LAUNCH_DRV, CW_AUX_STREAM);
  d.regs[0] = 0xf1;
  d.regs[1] = 3;
  d.regs[2] = 2;
  d.regs[3] = 1;
  d.regs[4] = 64;
  d.regs[5] = 2;
  d.extra[0] = 1;     // bz
  d.extra[1] = 0;     // smem
  d.extra[2] = 0x42;  // stream
  a = decode_call_args(d);
  CHECK(a[4] == pack_dim3(3, 2, 1));
  CHECK(a[5] == pack_dim3(64, 2, 1));
  CHECK(a[3] == 0x42);
}

TEST_CASE("NCCL collectives: count, comm hash, rank, nranks, seq, datatype|redop|peer") {
  auto e = call(CW_OP_NCCL_ALL_REDUCE, CW_DC_NCCL_REDUCE_LIKE, CW_AUX_STREAM);
  e.regs[2] = 1024;  // count
  e.regs[3] = 7;     // float32
  e.regs[4] = 0;     // sum
  e.extra[CW_X_COMM_HASH] = 0xabcdef;
  e.extra[CW_X_RANKS] = 2 | (uint64_t{4} << 32);
  e.extra[CW_X_SEQ] = 17;
  auto a = decode_call_args(e);
  CHECK(a[0] == 1024);
  CHECK(a[1] == 0xabcdef);
  CHECK(a[2] == 2);
  CHECK(a[3] == 4);
  CHECK(a[4] == 17);
  CHECK(a[5] == 7);

  auto p = call(CW_OP_NCCL_SEND, CW_DC_NCCL_P2P, CW_AUX_STREAM);
  p.regs[1] = 10;
  p.regs[2] = 3;
  p.regs[3] = 5;  // peer
  p.extra[CW_X_RANKS] = 0xffffffffull;  // communicator created before the trace
  a = decode_call_args(p);
  CHECK(a[0] == 10);
  CHECK(a[2] == -1);
  CHECK(a[5] == (3 | (5 << 16)));

  auto r = call(CW_OP_NCCL_REDUCE, CW_DC_NCCL_REDUCE, CW_AUX_STREAM);
  r.regs[4] = 2;  // max
  r.regs[5] = 1;  // root
  r.regs[3] = 9;
  a = decode_call_args(r);
  CHECK(a[5] == (9 | (2 << 8) | (1 << 16)));

  auto init = call(CW_OP_NCCL_COMM_INIT_RANK, CW_DC_NCCL_INIT_RANK);
  init.regs[1] = 8;  // nranks
  init.regs[2] = 3;  // rank
  init.extra[CW_X_COMM_HASH] = 0x1234;
  a = decode_call_args(init);
  CHECK(a[1] == 0x1234);
  CHECK(a[2] == 3);
  CHECK(a[3] == 8);
}

TEST_CASE("host records") {
  cw_switch_event s;
  std::memset(&s, 0, sizeof(s));
  s.hdr.ts_ns = 5;
  s.hdr.cpu = 1;
  s.prev_tid = 10;
  s.prev_pid = 9;
  s.prev_state = 0;
  s.next_tid = 20;
  s.next_pid = 20;
  std::strcpy(s.next_comm, "tar");
  SwitchRecord r = decode_switch(s);
  CHECK(r.prev_tid == 10);
  CHECK(r.prev_pid == 9);
  CHECK(r.prev_state == 0);
  CHECK(r.next_pid == 20);
  CHECK(comm_string(s.next_comm) == "tar");

  cw_wakeup_event w;
  std::memset(&w, 0, sizeof(w));
  w.hdr.pid = 100;
  w.hdr.tid = 101;
  w.tid = 7;
  w.pid = 6;
  w.target_cpu = 1;
  WakeupRecord wr = decode_wakeup(w);
  CHECK(wr.waker_tid == 101);
  CHECK(wr.waker_pid == 100);
  CHECK(wr.tid == 7);
  CHECK(wr.pid == 6);

  // A TCP retransmit says in a5 whether pid/tid came from the socket's owner.
  cw_host_event t;
  std::memset(&t, 0, sizeof(t));
  t.hdr.op = CW_OP_TCP_RETRANSMIT6;
  t.hdr.pid = 300;
  t.hdr.tid = 301;
  t.hdr.flags = CW_F_SOCK_OWNER;
  t.a[3] = 1;  // ::1
  t.a[4] = 40000 | int64_t{5555} << 16 | int64_t{1} << 32;
  CallRecord tr = decode_host(t);
  CHECK(tr.op == CW_OP_TCP_RETRANSMIT6);
  CHECK(tr.pid == 300);
  CHECK(tr.tid == 301);
  CHECK(tr.a[3] == 1);
  CHECK(tr.a[4] == t.a[4]);
  CHECK(tr.a[5] == 1);
  t.hdr.flags = 0;
  t.hdr.op = CW_OP_TCP_RETRANSMIT;
  CHECK(decode_host(t).a[5] == 0);
  // Other host events keep a5 as the BPF side wrote it.
  t.hdr.op = CW_OP_BLOCK_RQ;
  t.hdr.flags = CW_F_SOCK_OWNER;
  t.a[5] = 7;
  CHECK(decode_host(t).a[5] == 7);

  cw_proc_event f;
  std::memset(&f, 0, sizeof(f));
  f.hdr.op = CW_OP_PROC_FORK;
  f.hdr.pid = 50;
  f.child_pid = 51;
  CallRecord fr = decode_proc(f);
  CHECK(fr.pid == 50);
  CHECK(fr.a[0] == 51);
}

TEST_CASE("CUDA graphs: capture carries the stream and the graph, instantiation the new exec, launches the exec") {
  // Decode classes and aux bits as the op table gives them to the probes.
  auto from_table = [](uint16_t id) {
    const OpInfo* op = find_op(id);
    REQUIRE(op != nullptr);
    return call(id, op->probe.dclass, op->probe.aux);
  };
  auto begin = from_table(CW_OP_CUDA_STREAM_BEGIN_CAPTURE);
  begin.regs[0] = 0x1001;  // stream
  begin.regs[1] = 2;       // cudaStreamCaptureModeRelaxed
  auto a = decode_call_args(begin);
  CHECK(a[0] == 2);
  CHECK(a[3] == 0x1001);

  auto end = from_table(CW_OP_CU_STREAM_END_CAPTURE);
  end.regs[0] = 0x1001;
  end.regs[1] = 0x7ffd1000;              // &graph
  end.extra[CW_X_OUT] = 0x6a0000000001;  // read through it on return
  a = decode_call_args(end);
  CHECK(a[2] == 0x6a0000000001);
  CHECK(a[3] == 0x1001);
  CHECK(a[1] == 0);

  auto inst = from_table(CW_OP_CUDA_GRAPH_INSTANTIATE_WITH_FLAGS);
  inst.regs[0] = 0x7ffd2000;  // &exec
  inst.regs[1] = 0x6a0000000001;
  inst.regs[2] = 1;  // cudaGraphInstantiateFlagAutoFreeOnLaunch
  inst.extra[CW_X_OUT] = 0x6e0000000001;
  a = decode_call_args(inst);
  CHECK(a[1] == 0x6e0000000001);
  CHECK(a[2] == 0x6a0000000001);

  auto launch = from_table(CW_OP_CU_GRAPH_LAUNCH);
  launch.regs[0] = 0x6e0000000001;
  launch.regs[1] = 0x1001;
  a = decode_call_args(launch);
  CHECK(a[1] == 0x6e0000000001);
  CHECK(a[3] == 0x1001);

  auto destroy = from_table(CW_OP_CUDA_GRAPH_EXEC_DESTROY);
  destroy.regs[0] = 0x6e0000000001;
  destroy.regs[1] = 0x999;  // not an argument of cudaGraphExecDestroy: no stream
  a = decode_call_args(destroy);
  CHECK(a[1] == 0x6e0000000001);
  CHECK(a[3] == 0);
}

TEST_CASE("probe table: derived from the op table; every probe's op has a family, its cookie the op's source") {
  std::set<std::pair<LibKind, std::string_view>> seen;
  for (const ProbeSpec& s : probe_specs()) {
    CAPTURE(s.symbol);
    REQUIRE(s.op != nullptr);
    const OpInfo& op = *s.op;
    CHECK(find_op(op.id) == &op);
    CHECK(op.is_call);
    CHECK(op.family != OpFamily::host);
    CHECK(family_name(op.family) != "host");
    CHECK(lib_kind_of_source(op.source) == s.lib);
    CHECK(seen.insert({s.lib, s.symbol}).second);  // one probe per symbol
    // The symbol is the op's name or a versioned alias of it (cuMemAlloc_v2,
    // cuLaunchKernel_ptsz, cuStreamBeginCapture_v2_ptsz).
    const std::string_view sym = s.symbol;
    CHECK(sym.substr(0, op.name.size()) == op.name);
    const std::string_view suffix = sym.substr(std::min(op.name.size(), sym.size()));
    CHECK((suffix.empty() || suffix == "_v2" || suffix == "_ptsz" || suffix == "_v2_ptsz"));
    // The cookie carries the table's fields, the source included (the BPF side has no op
    // ranges to derive it from).
    const uint64_t c = s.cookie;
    CHECK(c == make_cookie(op));
    CHECK(CW_COOKIE_OP(c) == op.id);
    CHECK(CW_COOKIE_SRC(c) == op.source);
    CHECK(CW_COOKIE_CLASS(c) == op.probe.dclass);
    CHECK(CW_COOKIE_AUX(c) == op.probe.aux);
    CHECK(CW_COOKIE_NSTACK(c) == op.probe.nstack);
    CHECK(CW_COOKIE_STRUCT_REG(c) == op.probe.struct_reg);
    CHECK(CW_COOKIE_COMM_LOC(c) == op.probe.comm_loc);
    CHECK(CW_COOKIE_NCCL_ROLE(c) == op.probe.nccl_role);
    CHECK(CW_COOKIE_OUT_REG(c) == op.probe.out_reg);
    CHECK(CW_COOKIE_AGG(c) == (is_fast_counted_op(op.id) ? 1u : 0u));
    CHECK(op.probe.nstack <= 4);
    // The classes that decode extra[CW_X_OUT] are exactly those whose cookie asks for it.
    const bool reads_out = op.probe.dclass == CW_DC_ALLOC || op.probe.dclass == CW_DC_CAPTURE_END ||
                           op.probe.dclass == CW_DC_GRAPH_INSTANTIATE;
    CHECK((op.probe.out_reg != 0) == reads_out);
  }
  // Every op of a probed library is probed; no host op is.
  for (const OpInfo& op : op_catalog()) {
    CAPTURE(op.name);
    const bool probed = std::any_of(probe_specs().begin(), probe_specs().end(),
                                    [&](const ProbeSpec& s) { return s.op == &op; });
    CHECK(probed == lib_kind_of_source(op.source).has_value());
  }
  // The graph ops: capture, instantiation and destroy are host-side (graph_build), launches
  // put work on a queue (graph).
  for (uint16_t id : {CW_OP_CUDA_STREAM_BEGIN_CAPTURE, CW_OP_CUDA_STREAM_BEGIN_CAPTURE_PTSZ, CW_OP_CUDA_STREAM_END_CAPTURE,
                      CW_OP_CUDA_STREAM_END_CAPTURE_PTSZ, CW_OP_CUDA_GRAPH_INSTANTIATE,
                      CW_OP_CUDA_GRAPH_INSTANTIATE_WITH_FLAGS, CW_OP_CUDA_GRAPH_INSTANTIATE_WITH_PARAMS,
                      CW_OP_CUDA_GRAPH_INSTANTIATE_WITH_PARAMS_PTSZ, CW_OP_CUDA_GRAPH_EXEC_DESTROY,
                      CW_OP_CU_STREAM_BEGIN_CAPTURE, CW_OP_CU_STREAM_END_CAPTURE, CW_OP_CU_GRAPH_INSTANTIATE,
                      CW_OP_CU_GRAPH_INSTANTIATE_WITH_FLAGS, CW_OP_CU_GRAPH_INSTANTIATE_WITH_PARAMS,
                      CW_OP_CU_GRAPH_EXEC_DESTROY}) {
    CAPTURE(id);
    REQUIRE(find_op(id) != nullptr);
    CHECK(find_op(id)->family == OpFamily::graph_build);
  }
  for (uint16_t id : {CW_OP_CUDA_GRAPH_LAUNCH, CW_OP_CUDA_GRAPH_LAUNCH_PTSZ, CW_OP_CU_GRAPH_LAUNCH})
    CHECK(find_op(id)->family == OpFamily::graph);
  CHECK(lib_kind_of("libcudart.so.13") == LibKind::cudart);
  CHECK(lib_kind_of("libcudart.so.12.4.127") == LibKind::cudart);
  CHECK(lib_kind_of("libcuda.so.1") == LibKind::cuda);
  CHECK(lib_kind_of("libnccl.so.2") == LibKind::nccl);
  CHECK(!lib_kind_of("libcudnn.so.9"));
  CHECK(!lib_kind_of("libcublas.so.13"));
}

TEST_CASE("socket records: a write's outcome and entry time, an accept's peer from the kernel socket") {
  cw_sock_event e;
  std::memset(&e, 0, sizeof(e));
  e.hdr.kind = CW_REC_SOCK;
  e.hdr.ts_ns = 5000;
  e.hdr.pid = 42;
  e.hdr.tid = 43;
  e.fd = 7;
  e.sock_op = CW_SOCK_WRITE;
  e.bytes = 3;
  e.captured = 3;
  e.send = CW_SEND_SHORT;
  e.enter_ns = 4000;
  std::memcpy(e.data, "dat", 3);
  auto r = decode_sock(&e, CW_SOCK_HDR_BYTES + 3);
  REQUIRE(r);
  CHECK(r->op == requests::SockOp::write);
  CHECK(r->send == requests::SendResult::short_write);
  CHECK(r->enter_ns == 4000);
  CHECK(r->data == "dat");
  CHECK(r->offset == 0);
  // A piece of a long write: where it starts in the syscall's bytes, and the syscall's total.
  e.offset = 2048;
  e.total = 70000;
  r = decode_sock(&e, CW_SOCK_HDR_BYTES + 3);
  REQUIRE(r);
  CHECK(r->offset == 2048);
  CHECK(r->total == 70000);
  e.send = CW_SEND_EAGAIN;
  e.bytes = 0;
  e.captured = 0;
  r = decode_sock(&e, CW_SOCK_HDR_BYTES);
  REQUIRE(r);
  CHECK(r->send == requests::SendResult::eagain);
  CHECK(r->bytes == 0);
  // An accept carries the connection's identity as the kernel socket has it (libuv's
  // accept4(fd, NULL, NULL) leaves no sockaddr to read), not an entry time.
  std::memset(&e, 0, sizeof(e));
  e.hdr.kind = CW_REC_SOCK;
  e.sock_op = CW_SOCK_ACCEPT;
  e.fd = 8;
  cw_sock_conn c{};
  c.netns = 4026531840u;
  c.family = AF_INET;
  c.local_port = 8000;
  c.peer_port = 50112;
  const uint8_t peer4[4] = {10, 0, 4, 21}, local4[4] = {10, 0, 4, 1};
  std::memcpy(c.peer_addr, peer4, 4);
  std::memcpy(c.local_addr, local4, 4);
  std::memcpy(e.data, &c, sizeof(c));
  e.captured = sizeof(c);
  r = decode_sock(&e, CW_SOCK_HDR_BYTES + sizeof(c));
  REQUIRE(r);
  CHECK(r->peer == "10.0.4.21:50112");
  CHECK(r->data.empty());
  CHECK(r->enter_ns == 0);
  // IPv6 peers in brackets; a record whose socket was no TCP one has no peer.
  c.family = AF_INET6;
  std::memset(c.peer_addr, 0, 16);
  c.peer_addr[0] = 0xfd;
  c.peer_addr[15] = 2;
  std::memcpy(e.data, &c, sizeof(c));
  r = decode_sock(&e, CW_SOCK_HDR_BYTES + sizeof(c));
  REQUIRE(r);
  CHECK(r->peer == "[fd00::2]:50112");
  c.family = 0;
  std::memcpy(e.data, &c, sizeof(c));
  r = decode_sock(&e, CW_SOCK_HDR_BYTES + sizeof(c));
  REQUIRE(r);
  CHECK(r->peer.empty());
  // Cut short: the record claims more than it has.
  CHECK_FALSE(decode_sock(&e, CW_SOCK_HDR_BYTES + 10));
  CHECK(r->send == requests::SendResult::ok);
}

TEST_CASE("own connection keys: the server side's 4-tuple, an IPv4-mapped address keyed as IPv4") {
  Endpoint server{AF_INET, {127, 0, 0, 1}, 8000};
  Endpoint client{AF_INET, {127, 0, 0, 1}, 41000};
  const cw_sock_conn k = own_conn_key(77, server, client);
  CHECK(k.netns == 77);
  CHECK(k.family == AF_INET);
  CHECK(k.local_port == 8000);
  CHECK(k.peer_port == 41000);
  CHECK(k.local_addr[0] == 127);
  CHECK(k.peer_addr[3] == 1);
  CHECK(k.adopted == 0);
  CHECK(conn_peer(k)->text() == "127.0.0.1:41000");
  CHECK(conn_local(k)->text() == "127.0.0.1:8000");
  // The same connection seen through a dual-stack listener's mapped addresses.
  Endpoint mapped_server{AF_INET6, {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1}, 8000};
  Endpoint mapped_client{AF_INET6, {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1}, 41000};
  const cw_sock_conn m = own_conn_key(77, mapped_server, mapped_client);
  CHECK(std::memcmp(&k, &m, sizeof(k)) == 0);
  // Another port is another connection.
  const cw_sock_conn other = own_conn_key(77, server, Endpoint{AF_INET, {127, 0, 0, 1}, 41001});
  CHECK(std::memcmp(&k, &other, sizeof(k)) != 0);
}

TEST_CASE("socket records as the drain thread queues them: each length-prefixed record in order, a cut tail ignored") {
  SockBatch b;
  auto put = [&](const std::string& rec) {
    const auto n = static_cast<uint32_t>(rec.size());
    b.bytes.insert(b.bytes.end(), reinterpret_cast<const char*>(&n), reinterpret_cast<const char*>(&n) + sizeof(n));
    b.bytes.insert(b.bytes.end(), rec.begin(), rec.end());
  };
  put("first");
  put("");
  put(std::string(300, 'x'));
  std::vector<std::string> seen;
  b.for_each([&](const char* d, size_t n) { seen.emplace_back(d, n); });
  REQUIRE(seen.size() == 3);
  CHECK(seen[0] == "first");
  CHECK(seen[1].empty());
  CHECK(seen[2] == std::string(300, 'x'));
  // A length that claims more than the batch holds ends the walk (never read past the end).
  const uint32_t too_long = 1000;
  b.bytes.insert(b.bytes.end(), reinterpret_cast<const char*>(&too_long), reinterpret_cast<const char*>(&too_long) + 4);
  b.bytes.push_back('y');
  seen.clear();
  b.for_each([&](const char* d, size_t n) { seen.emplace_back(d, n); });
  CHECK(seen.size() == 3);
  CHECK(SockBatch{}.bytes.empty());
}
