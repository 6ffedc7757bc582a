// A stand-in libnccl.so.2. Ranks are processes on this host: every communicator is a small
// shared-memory segment named after its unique id, and each collective is a real barrier
// across the ranks (futex-based, no spinning), so a rank that arrives late makes the others
// wait — the shape of an NCCL straggler — followed by the configured busy-wait.
#include <fcntl.h>
#include <linux/futex.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
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
  cwfake_spin_ns(g_latency_ns);
  return 0;
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
