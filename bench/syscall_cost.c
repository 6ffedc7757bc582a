// What one syscall costs an untraced process while `causeway trace` runs: the sock program
// (bpf/sock.bpf.h) sits on raw_syscalls sys_enter/sys_exit, so every syscall on the host runs
// its tgid filter. Times N rounds of write+read of 64 bytes over a socketpair (the syscalls
// the program switches on, the worst case for a process it does not trace) and N getppid()
// (one it ignores after the filter), and prints ns per syscall as JSON:
//   syscall_cost [--calls N]  ->  {"rw_ns": 412.5, "getppid_ns": 61.2}
// bench/request_cost.py runs it with and without a tracer in the same run (docs/BENCHMARKS.md).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
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
  double t0 = now_ns();
  for (long i = 0; i < calls; i++) {
    if (write(sv[0], buf, sizeof buf) != (ssize_t)sizeof buf || read(sv[1], buf, sizeof buf) != (ssize_t)sizeof buf) {
      perror("syscall_cost: write/read");
      return 1;
    }
  }
  double rw = (now_ns() - t0) / (2.0 * (double)calls);
  t0 = now_ns();
  for (long i = 0; i < calls; i++) (void)getppid();
  double ppid = (now_ns() - t0) / (double)calls;
  printf("{\"rw_ns\": %.1f, \"getppid_ns\": %.1f}\n", rw, ppid);
  return 0;
}
