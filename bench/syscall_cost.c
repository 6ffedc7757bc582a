// What one syscall costs an untraced process while `causeway trace` runs (bpf/sock.bpf.h). On
// the raw sys_enter/sys_exit hook every syscall on the host runs the program's tgid filter; on
// the syscall tracepoints only the socket syscalls do. Times N rounds of write+read of 64
// bytes over a socketpair (syscalls the program is attached to, the worst case for a process
// it does not trace) and N getppid() (one it is not attached to on the syscall tracepoints),
// and prints ns per syscall as JSON: the mean, and the fastest tenth of blocks of 100 calls
// (`_p10`), which a busy host's preemptions and steal time rarely reach (so the ratio of two
// runs on a loaded 2-vCPU VM says what the syscall costs, not what the neighbours did):
//   syscall_cost [--calls N]  ->  {"rw_ns": 412.5, "getppid_ns": 61.2, "rw_p10_ns": 390.1, "getppid_p10_ns": 58.0}
// bench/request_cost.py runs it with and without a tracer in the same run (docs/BENCHMARKS.md).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

enum { kBlock = 100 };

static int by_value(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

// The value a tenth of the way up (sorts v).
static double tenth(double* v, long n) {
  qsort(v, (size_t)n, sizeof *v, by_value);
  return v[n / 10];
}

int main(int argc, char** argv) {
  long calls = 500000;
  for (int i = 1; i + 1 < argc; i += 2)
    if (strcmp(argv[i], "--calls") == 0) calls = strtol(argv[i + 1], NULL, 10);
  if (calls <= 0) {
    fprintf(stderr, "syscall_cost: --calls must be positive\n");
    return 2;
  }
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) {
    perror("syscall_cost: socketpair");
    return 1;
  }
  char buf[64] = {0};
  const long blocks = (calls + kBlock - 1) / kBlock;
  double* per_block = malloc(sizeof(double) * (size_t)blocks);
  if (!per_block) return 1;
  double t0 = now_ns();
  for (long b = 0; b < blocks; b++) {
    const double b0 = now_ns();
    for (long i = 0; i < kBlock; i++) {
      if (write(sv[0], buf, sizeof buf) != (ssize_t)sizeof buf || read(sv[1], buf, sizeof buf) != (ssize_t)sizeof buf) {
        perror("syscall_cost: write/read");
        return 1;
      }
    }
    per_block[b] = (now_ns() - b0) / (2.0 * kBlock);
  }
  const double rw = (now_ns() - t0) / (2.0 * (double)(blocks * kBlock));
  const double rw_p10 = tenth(per_block, blocks);
  t0 = now_ns();
  for (long b = 0; b < blocks; b++) {
    const double b0 = now_ns();
    for (long i = 0; i < kBlock; i++) (void)syscall(SYS_getppid);
    per_block[b] = (now_ns() - b0) / kBlock;
  }
  const double ppid = (now_ns() - t0) / (double)(blocks * kBlock);
  printf("{\"rw_ns\": %.1f, \"getppid_ns\": %.1f, \"rw_p10_ns\": %.1f, \"getppid_p10_ns\": %.1f}\n", rw, ppid, rw_p10,
         tenth(per_block, blocks));
  free(per_block);
  return 0;
}
