// A stand-in libnccl.so.2. Ranks are processes on this host: every communicator is a small
// shared-memory segment named after its unique id, and each collective is a real barrier
// across the ranks (futex-based, no spinning), so a rank that arrives late makes the others
// wait — the shape of an NCCL straggler — followed by the configured busy-wait.
//
// Socket transport: with CW_FAKE_NCCL_SOCKET=ADDR:PORT (IPv4 a.b.c.d or IPv6 [addr]) every
// collective also sends CW_FAKE_NCCL_SOCKET_BYTES (default 256 KiB, as a 4-byte length then the
// payload) over one TCP connection per process and waits for the peer's one-byte answer
// (tests/testprogs/cw_tcp.cpp --serve), the way NCCL's socket transport moves each step's data
// between hosts: packet loss on that path stretches the collective by a retransmit timeout.
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fake_common.h"

typedef struct {
  char internal[128];
} ncclUniqueId;

struct shared_barrier {
  uint32_t arrived;
  uint32_t generation;
  uint32_t users;
};

struct fake_comm {
  int rank, nranks;
  struct shared_barrier* bar;
  char shm_name[64];
};

static uint64_t g_latency_ns;
__attribute__((constructor)) static void init(void) { g_latency_ns = cwfake_env_latency(); }

static int g_sock = -2;  // -2: not tried yet, -1: no socket transport
static size_t g_sock_bytes = 256 * 1024;

static int sock_connect(void) {
  const char* spec = getenv("CW_FAKE_NCCL_SOCKET");
  if (!spec || !*spec) return -1;
  if (getenv("CW_FAKE_NCCL_SOCKET_BYTES")) g_sock_bytes = strtoull(getenv("CW_FAKE_NCCL_SOCKET_BYTES"), 0, 10);
  char host[128];
  const char* colon = strrchr(spec, ':');
  if (!colon || (size_t)(colon - spec) >= sizeof(host)) return -1;
  memcpy(host, spec, (size_t)(colon - spec));
  host[colon - spec] = 0;
  const int port = atoi(colon + 1);
  struct sockaddr_storage ss;
  memset(&ss, 0, sizeof(ss));
  socklen_t len;
  int af;
  if (host[0] == '[') {
    struct sockaddr_in6* a = (struct sockaddr_in6*)&ss;
    host[strlen(host) - 1] = 0;
    if (inet_pton(AF_INET6, host + 1, &a->sin6_addr) != 1) return -1;
    a->sin6_family = AF_INET6;
    a->sin6_port = htons((uint16_t)port);
    len = sizeof(*a);
    af = AF_INET6;
  } else {
    struct sockaddr_in* a = (struct sockaddr_in*)&ss;
    if (inet_pton(AF_INET, host, &a->sin_addr) != 1) return -1;
    a->sin_family = AF_INET;
    a->sin_port = htons((uint16_t)port);
    len = sizeof(*a);
    af = AF_INET;
  }
  int s = socket(af, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) return -1;
  int one = 1;
  setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  if (connect(s, (struct sockaddr*)&ss, len) != 0) {
    close(s);
    return -1;
  }
  return s;
}

static int write_all(int fd, const void* p, size_t n) {
  const char* b = p;
  while (n > 0) {
    ssize_t w = write(fd, b, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    b += w;
    n -= (size_t)w;
  }
  return 0;
}

// One step's data to the peer and its answer back; 0 when there is no socket transport.
static int sock_round(void) {
  if (g_sock == -2) g_sock = sock_connect();
  if (g_sock < 0) return 0;
  static char payload[64 * 1024];
  uint32_t len = htonl((uint32_t)g_sock_bytes);
  if (write_all(g_sock, &len, sizeof(len))) return 6; /* ncclSystemError */
  for (size_t left = g_sock_bytes; left > 0;) {
    size_t part = left < sizeof(payload) ? left : sizeof(payload);
    if (write_all(g_sock, payload, part)) return 6;
    left -= part;
  }
  char ack;
  ssize_t r;
  do r = read(g_sock, &ack, 1);
  while (r < 0 && errno == EINTR);
  return r == 1 ? 0 : 6;
}
CWFAKE_EXPORT void cwfake_set_latency_ns(uint64_t ns) { g_latency_ns = ns; }

static void futex_wait(uint32_t* addr, uint32_t val) { syscall(SYS_futex, addr, FUTEX_WAIT, val, 0, 0, 0); }
static void futex_wake(uint32_t* addr) { syscall(SYS_futex, addr, FUTEX_WAKE, 1 << 30, 0, 0, 0); }

static void barrier(struct fake_comm* c) {
  if (c->nranks <= 1 || !c->bar) return;
  uint32_t gen = __atomic_load_n(&c->bar->generation, __ATOMIC_ACQUIRE);
  if (__atomic_add_fetch(&c->bar->arrived, 1, __ATOMIC_ACQ_REL) == (uint32_t)c->nranks) {
    __atomic_store_n(&c->bar->arrived, 0, __ATOMIC_RELAXED);
    __atomic_add_fetch(&c->bar->generation, 1, __ATOMIC_RELEASE);
    futex_wake(&c->bar->generation);
    return;
  }
  while (__atomic_load_n(&c->bar->generation, __ATOMIC_ACQUIRE) == gen) futex_wait(&c->bar->generation, gen);
}

CWFAKE_EXPORT int ncclGetVersion(int* v) {
  *v = 22800;
  return 0;
}

CWFAKE_EXPORT int ncclGetUniqueId(ncclUniqueId* id) {
  FILE* f = fopen("/dev/urandom", "rb");
  if (!f || fread(id->internal, 1, sizeof(id->internal), f) != sizeof(id->internal)) {
    if (f) fclose(f);
    return 2;
  }
  fclose(f);
  return 0;
}

static struct fake_comm* make_comm(const ncclUniqueId* id, int nranks, int rank) {
  struct fake_comm* c = calloc(1, sizeof(*c));
  c->rank = rank;
  c->nranks = nranks;
  uint64_t h = 0;
  memcpy(&h, id->internal, sizeof(h));
  snprintf(c->shm_name, sizeof(c->shm_name), "/cwfake-nccl-%016llx", (unsigned long long)h);
  if (nranks > 1) {
    int fd = shm_open(c->shm_name, O_RDWR | O_CREAT, 0600);
    if (fd >= 0) {
      if (ftruncate(fd, sizeof(struct shared_barrier)) == 0)
        c->bar = mmap(0, sizeof(struct shared_barrier), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      if (c->bar == MAP_FAILED) c->bar = 0;
      close(fd);
    }
    if (c->bar) __atomic_add_fetch(&c->bar->users, 1, __ATOMIC_ACQ_REL);
  }
  return c;
}

CWFAKE_EXPORT int ncclCommInitRank(struct fake_comm** comm, int nranks, ncclUniqueId id, int rank) {
  if (rank < 0 || rank >= nranks) return 4; /* ncclInvalidArgument */
  *comm = make_comm(&id, nranks, rank);
  barrier(*comm);
  return 0;
}

CWFAKE_EXPORT int ncclCommInitAll(struct fake_comm** comms, int ndev, const int* devlist) {
  ncclUniqueId id;
  ncclGetUniqueId(&id);
  for (int i = 0; i < ndev; i++) comms[i] = make_comm(&id, 1, i);
  return 0;
}

CWFAKE_EXPORT int ncclCommDestroy(struct fake_comm* c) {
  if (!c) return 4;
  if (c->bar) {
    if (__atomic_sub_fetch(&c->bar->users, 1, __ATOMIC_ACQ_REL) == 0) shm_unlink(c->shm_name);
    munmap(c->bar, sizeof(struct shared_barrier));
  }
  free(c);
  return 0;
}

static int collective(struct fake_comm* c) {
  if (!c) return 4;
  barrier(c);
  int rc = sock_round();
  cwfake_spin_ns(g_latency_ns);
  return rc;
}

CWFAKE_EXPORT int ncclAllReduce(const void* s, void* r, size_t count, int dt, int op, struct fake_comm* c,
                                void* st) {
  return collective(c);
}
CWFAKE_EXPORT int ncclAllGather(const void* s, void* r, size_t count, int dt, struct fake_comm* c, void* st) {
  return collective(c);
}
CWFAKE_EXPORT int ncclReduceScatter(const void* s, void* r, size_t count, int dt, int op, struct fake_comm* c,
                                    void* st) {
  return collective(c);
}
CWFAKE_EXPORT int ncclBroadcast(const void* s, void* r, size_t count, int dt, int root, struct fake_comm* c,
                                void* st) {
  return collective(c);
}
CWFAKE_EXPORT int ncclBcast(void* b, size_t count, int dt, int root, struct fake_comm* c, void* st) {
  return collective(c);
}
CWFAKE_EXPORT int ncclReduce(const void* s, void* r, size_t count, int dt, int op, int root, struct fake_comm* c,
                             void* st) {
  return collective(c);
}
CWFAKE_EXPORT int ncclSend(const void* b, size_t count, int dt, int peer, struct fake_comm* c, void* st) {
  if (!c) return 4;
  cwfake_spin_ns(g_latency_ns);
  return 0;
}
CWFAKE_EXPORT int ncclRecv(void* b, size_t count, int dt, int peer, struct fake_comm* c, void* st) {
  if (!c) return 4;
  cwfake_spin_ns(g_latency_ns);
  return 0;
}
CWFAKE_EXPORT int ncclGroupStart(void) { return 0; }
CWFAKE_EXPORT int ncclGroupEnd(void) { return 0; }
