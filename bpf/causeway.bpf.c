/* The causeway BPF object: one skeleton so every unit shares the rings, the traced-process
 * map and the drop counters. Each domain lives in its own header. */
#include "calls.bpf.h"
#include "io.bpf.h"
#include "mem.bpf.h"
#include "net.bpf.h"
#include "proc.bpf.h"
#include "sched.bpf.h"
#include "sock.bpf.h"
#include "ssl.bpf.h"

char LICENSE[] SEC("license") = "GPL";
