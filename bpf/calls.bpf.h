/* CUDA runtime, CUDA driver and NCCL calls: one generic entry and one generic return program,
 * attached to every traced function with a cookie saying what to copy (events.h).
 *
 * The entry probe only saves the call (cookie, argument registers, copied stack words or
 * config struct, timestamp) in the thread's slot; nothing goes to the ring until the return
 * probe writes the one record of the call.
 *
 * Entry and return are paired per thread in an ARRAY slot indexed by tid & targ_task_mask.
 * Measured here (bench/probe_cost, thread CPU per call over an empty uprobe+uretprobe):
 * hash map keyed by tid +460 ns, task-local storage +190 ns, array slot ≈ +40 ns — an array
 * lookup is inlined by the verifier, no helper call. The slot records its owner tid; when
 * pid_max ≤ the array size no two live threads share a slot; beyond that, a thread whose slot
 * is busy with another live call is not traced for that call and the miss is counted
 * (CW_DROP_SLOT), never silent. */
#pragma once

#include "maps.bpf.h"
#include "python.bpf.h"

/* Nesting per thread: __cudaLaunchKernel → cudaLaunchKernel → cuLaunchKernel is 3 deep. */
#define CW_MAX_DEPTH 4

/* ============================ User stacks: only where they explain something ============================
 * Taken by the return probe (call_stack(), its only caller) for a call that
 *   - is the first of its op from this call site on this thread, so every call site is known
 *     once (the site is the caller's return address, which the return probe sees as its ip);
 *   - took at least its (process, op) threshold: user space keeps stack_thresholds from the
 *     running percentiles (collector/stack_policy.h); a pair without an entry uses
 *     targ_stack_floor_ns;
 *   - or began after the thread spent targ_stack_gap_ns outside traced calls (a host stall
 *     between calls: the correlator's between-calls chains).
 * A fast call from a known site — nearly every call — costs a few compares; a user stack walk
 * costs ~0.5 µs. At return the stack starts at the call site (the traced function itself is
 * the record's op). What this loses, and why chains do not need it: docs/COLLECTOR.md "Stacks".
 * Another unwinder (Python frames, …) hooks in here, next to bpf_get_stackid. */

/* Call sites already stacked by this thread: (return address | op << 48), 8 sets × 4 ways,
 * a way picked at random on a miss. A thread calling from more hot sites than fit stacks
 * some calls again (cost, never a loss). */
#define CW_SITE_SETS 8
#define CW_SITE_WAYS 4
struct cw_stack_state {
  __u64 last_return; /* when the thread's last outermost traced call returned; 0: none yet */
  __u64 site_gen;    /* cw_site_gen when sites[] was last valid */
  __u64 sites[CW_SITE_SETS * CW_SITE_WAYS];
};

/* Set by collector/bpf_loader.cpp (defaults there). */
const volatile __u64 targ_stack_floor_ns = 50000;
const volatile __u64 targ_stack_gap_ns = 500000;

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 16384);
  __type(key, struct cw_stack_key);
  __type(value, __u64);
} stack_thresholds SEC(".maps");

/* Bumped by the collector when it starts reading a process's Python frames: the calls already
 * stacked there carried none, so every thread forgets its known sites and stacks each once more
 * (a module's first call often comes before the collector has seen the process). */
volatile __u64 cw_site_gen = 0;

/* True the first time (as far as the set remembers) this thread calls op from this site. */
static __always_inline bool new_call_site(struct cw_stack_state *st, __u64 site, __u64 now) {
  __u64 gen = cw_site_gen;
  if (st->site_gen != gen) {
    __builtin_memset(st->sites, 0, sizeof(st->sites));
    st->site_gen = gen;
  }
  __u32 set = (__u32)((site * 0x9E3779B97F4A7C15ULL) >> 61);
  __u64 *ways = &st->sites[set * CW_SITE_WAYS];
#pragma unroll
  for (int i = 0; i < CW_SITE_WAYS; i++)
    if (ways[i] == site) return false;
  ways[now & (CW_SITE_WAYS - 1)] = site;
  return true;
}

/* True when a returning call can explain something: the first of its op from its call site on
 * this thread, the first after targ_stack_gap_ns outside traced calls, or at least its (process,
 * op) threshold. Such a call gets a user stack and, when its op is fast_counted, its own record
 * (below, "Aggregated calls"). outermost: not nested in another traced call of the thread. */
static __always_inline bool call_explains(struct pt_regs *ctx, struct cw_stack_state *st, __u32 tgid, __u16 op,
                                          __u64 start, __u64 now, bool outermost) {
  bool after_gap = false;
  if (outermost) {
    after_gap = st->last_return && start - st->last_return >= targ_stack_gap_ns;
    st->last_return = now;
  }
  __u64 dur = now - start;
  __u64 site = PT_REGS_IP(ctx) | ((__u64)op << 48);
  if (new_call_site(st, site, now) || after_gap) return true;
  if (dur < targ_stack_floor_ns) return false;
  struct cw_stack_key k = {.pid = tgid, .op = op, ._pad = 0};
  __u64 *threshold = bpf_map_lookup_elem(&stack_thresholds, &k);
  return !threshold || dur >= *threshold;
}

/* The user stack id of a call that explains something, or -1; *py_stack: the key of the calling
 * thread's Python frames (bpf/python.bpf.h) taken with it, 0 when none. */
static __always_inline __s32 call_stack(struct pt_regs *ctx, bool explains, __u64 *py_stack) {
  *py_stack = 0;
  if (!targ_stacks || !explains) return -1;
  long sid = bpf_get_stackid(ctx, &stacks, BPF_F_USER_STACK);
  if (sid < 0) count_drop(CW_DROP_STACK);
  /* At return the interpreter's current frame is still the caller's: its line made the call. */
  *py_stack = cw_py_stack();
  return sid;
}
/* ========================================== end of user stacks ========================================== */

/* --record-all (targ_record_all): every call a record, none only counted ("Aggregated calls" below). */
const volatile bool targ_record_all = false;

struct cw_frame {
  __u64 ts;
  __u64 cookie;
  __u64 sp; /* the stack pointer at entry: the return of this call sees sp + CW_RET_SP_DELTA */
  __u64 regs[CW_NREGS];
  __u64 extra[CW_NEXTRA];
  __u32 first_of_process; /* the process's first traced call: its return wakes the consumer */
  __u16 nested_recorded;  /* a call nested in this one was recorded: so is this one */
  __u16 switched_out;     /* the thread left its CPU while this call ran (cw_sched_switch): recorded */
};

/* A thread's cache of where its counted calls are counted ("Aggregated calls" below), direct
 * mapped by op: (op << 16) | CW_AGG_WHERE_*. Zero: not known yet. */
#define CW_AGG_CACHE 8

struct cw_task {
  __u32 owner; /* tid using this slot */
  __u32 depth;
  struct cw_frame f[CW_MAX_DEPTH]; /* f[0] in the first two cache lines with owner and depth */
  __u32 agg_where[CW_AGG_CACHE];
  struct cw_stack_state stack;
};

/* 32768 slots × 792 B = 24.8 MiB of kernel memory; the loader sizes it to pid_max rounded up
 * to a power of two (at most 32768) and sets targ_task_mask = size - 1. */
const volatile __u32 targ_task_mask = 32767;
struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 32768);
  __type(key, __u32);
  __type(value, struct cw_task);
} tasks SEC(".maps");

/* Each slot's run of counted calls ("Aggregated calls"): apart from `tasks` so the collector can
 * read them all at stop (32768 × 40 B). Sized like tasks by the loader. */
struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 32768);
  __type(key, __u32);
  __type(value, struct cw_run);
} runs SEC(".maps");

/* A slot whose owner has been inside a call this long is presumed dead (thread exited
 * mid-call) and may be taken over. */
#define CW_STALE_NS (600ULL * 1000000000ULL)

/* NCCL communicators by (process, handle): handles are heap pointers, equal across forked
 * rank processes. A job has a handful; 4096 covers many jobs on a host. */
struct cw_comm_key {
  __u32 tgid;
  __u32 _pad;
  __u64 comm;
};
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 4096);
  __type(key, struct cw_comm_key);
  __type(value, struct cw_comm_info);
} comms SEC(".maps");

static __always_inline struct cw_comm_key comm_key(__u64 comm) {
  struct cw_comm_key k = {.tgid = bpf_get_current_pid_tgid() >> 32, ._pad = 0, .comm = comm};
  return k;
}

/* Argument register n (1-based) as saved in the frame; ctx offsets must be constant. */
static __always_inline __u64 saved_reg(const struct cw_frame *fr, __u32 n) {
  if (n < 1 || n > CW_NREGS) return 0;
  return fr->regs[n - 1];
}

/* FNV-1a over the 16 words of an ncclUniqueId: every rank of a communicator gets the same
 * value, different communicators different ones. */
static __always_inline __u64 hash_unique_id(__u64 sp) {
  __u64 w[16];
  __u64 h = 0xcbf29ce484222325ULL;
  if (bpf_probe_read_user(w, sizeof(w), (void *)(sp + 8))) return 0;
#pragma unroll
  for (int i = 0; i < 16; i++) h = (h ^ w[i]) * 0x100000001b3ULL;
  return h;
}

static __always_inline void nccl_entry(struct cw_frame *fr, __u64 cookie, struct pt_regs *ctx) {
  __u32 role = CW_COOKIE_NCCL_ROLE(cookie);
  if (role == CW_NCCL_INIT_RANK) {
    fr->extra[CW_X_COMM_HASH] = hash_unique_id(PT_REGS_SP(ctx));
    return;
  }
  __u32 loc = CW_COOKIE_COMM_LOC(cookie);
  __u64 comm = loc == 7 ? fr->extra[0] : loc == 8 ? fr->extra[1] : saved_reg(fr, loc);
  struct cw_comm_key key = comm_key(comm);
  struct cw_comm_info *ci = bpf_map_lookup_elem(&comms, &key);
  if (!ci) {
    /* Created before the trace started: the handle stands in for the id, rank unknown. */
    fr->extra[CW_X_COMM_HASH] = comm;
    fr->extra[CW_X_RANKS] = 0xffffffffULL;
    fr->extra[CW_X_SEQ] = 0;
    if (role == CW_NCCL_COLL) {
      struct cw_comm_info ni = {.hash = comm, .rank = 0xffffffff, .nranks = 0, .seq = 1};
      if (bpf_map_update_elem(&comms, &key, &ni, BPF_NOEXIST) == -7) count_drop(CW_DROP_NCCL_MAP);
    }
    return;
  }
  fr->extra[CW_X_COMM_HASH] = ci->hash;
  fr->extra[CW_X_RANKS] = ci->rank | ((__u64)ci->nranks << 32);
  fr->extra[CW_X_SEQ] = role == CW_NCCL_COLL ? __sync_fetch_and_add(&ci->seq, 1) : ci->seq;
}

/* The call's stack arguments (CW_COOKIE_NSTACK words above the return address at entry) or the
 * struct its CW_COOKIE_STRUCT_REG argument points to, into extra. */
static __always_inline void copy_arguments(__u64 *extra, const struct cw_frame *fr, __u64 cookie) {
  __u32 nstack = CW_COOKIE_NSTACK(cookie);
  if (nstack) {
    __u32 n = nstack > 4 ? 4 : nstack;
    if (bpf_probe_read_user(extra, n * 8, (void *)(fr->sp + 8))) extra[0] = 0;
  }
  __u32 sreg = CW_COOKIE_STRUCT_REG(cookie);
  if (sreg) {
    if (bpf_probe_read_user(extra, CW_STRUCT_BYTES, (void *)saved_reg(fr, sreg)))
      __builtin_memset(extra, 0, CW_NEXTRA * sizeof(__u64));
  }
}

/* Whether the entry leaves the argument copies to the return: a fast_counted op's call is mostly
 * only counted, and a copy is a user-memory read (~80 ns a call here, docs/BENCHMARKS.md). At the
 * return both are still the caller's: the stack arguments sit in the caller's outgoing argument
 * area (the callee may reuse it by the ABI; launch entry points forward them unchanged), and the
 * launch config struct is caller memory. docs/COLLECTOR.md "Aggregated calls". */
static __always_inline bool copies_at_return(__u64 cookie) {
  return CW_COOKIE_AGG(cookie) && !targ_record_all;
}

/* What an entry tells a session uprobe (bpf_session_is_return): run the return for this call, or
 * skip it (the kernel then does not hijack the return address: no return trap at all). */
#define CW_RUN_RETURN 0
#define CW_SKIP_RETURN 1

/* The entry of a traced call: saves the frame its return completes. Returns CW_SKIP_RETURN for
 * a call whose return has nothing to do (not traced), CW_RUN_RETURN otherwise. */
static __always_inline int enter_call(struct pt_regs *ctx) {
  if (cw_stopped) return CW_SKIP_RETURN;
  __u64 cookie = bpf_get_attach_cookie(ctx);
  __u64 id = bpf_get_current_pid_tgid();
  __u32 tgid = id >> 32;
  if (targ_filter && !is_traced(tgid)) return CW_SKIP_RETURN;

  __u32 tid = (__u32)id;
  __u32 idx = tid & targ_task_mask;
  struct cw_task *t = bpf_map_lookup_elem(&tasks, &idx);
  if (!t) return CW_SKIP_RETURN;
  bool first = false;
  if (t->owner != tid) {
    if (t->depth != 0 && bpf_ktime_get_ns() - t->f[0].ts < CW_STALE_NS) {
      count_drop(CW_DROP_SLOT);
      return CW_SKIP_RETURN;
    }
    t->owner = tid;
    t->depth = 0;
    __builtin_memset(&t->stack, 0, sizeof(t->stack));
    __builtin_memset(t->agg_where, 0, sizeof(t->agg_where));
    struct cw_run *run = bpf_map_lookup_elem(&runs, &idx);
    if (run) __builtin_memset(run, 0, sizeof(*run)); /* a previous owner's run: that thread is gone */
    first = mark_traced(tgid); /* first call of this thread (or first since its slot was reused) */
    announce_process(tgid);
  }
  __u32 d = t->depth;
  /* Saved frames whose stack is gone: their call was left without a return (longjmp, a C++
   * exception unwinding through it), so this call is not nested in them — it starts above
   * their stack pointer, or at it as a new call of the same function. At the same stack
   * pointer, another function is a tail call of the saved one (CUDA 13's __cudaLaunchKernel
   * is `jmp cudaLaunchKernel`): both return at once, each through its own frame. Dropped
   * frames are counted; without this, each such call would leave the thread one frame deeper
   * until every later call overflowed the frames. */
  __u64 sp = PT_REGS_SP(ctx);
#pragma unroll
  for (int k = 0; k < CW_MAX_DEPTH; k++) {
    if (d == 0 || d > CW_MAX_DEPTH) break;
    const struct cw_frame *top = &t->f[(d - 1) & (CW_MAX_DEPTH - 1)];
    if (top->sp > sp || (top->sp == sp && top->cookie != cookie)) break;
    d--;
    count_drop(CW_DROP_UNPAIRED);
  }
  t->depth = d + 1;
  if (d >= CW_MAX_DEPTH) {
    count_drop(CW_DROP_DEPTH);
    return CW_RUN_RETURN; /* its return takes the depth back down */
  }
  /* d < CW_MAX_DEPTH already; the barrier keeps the compiler from dropping the mask the
   * verifier needs after the loop above. */
  barrier_var(d);
  struct cw_frame *fr = &t->f[d & (CW_MAX_DEPTH - 1)];
  fr->cookie = cookie;
  fr->sp = sp;
  fr->first_of_process = first;
  fr->nested_recorded = 0;
  fr->switched_out = 0; /* before fr->ts: a switch between the two is not inside the call */
  fr->regs[0] = PT_REGS_PARM1(ctx);
  fr->regs[1] = PT_REGS_PARM2(ctx);
  fr->regs[2] = PT_REGS_PARM3(ctx);
  fr->regs[3] = PT_REGS_PARM4(ctx);
  fr->regs[4] = PT_REGS_PARM5(ctx);
  fr->regs[5] = PT_REGS_PARM6(ctx);

  /* A counted op's copies wait for its return, which makes them only for a call it records. */
  if (!copies_at_return(cookie)) copy_arguments(fr->extra, fr, cookie);
  if (CW_COOKIE_NCCL_ROLE(cookie)) nccl_entry(fr, cookie, ctx);
  /* Last, so the time spent above is not charged to the call. */
  fr->ts = bpf_ktime_get_ns();
  return CW_RUN_RETURN;
}

SEC("uprobe")
int cw_enter(struct pt_regs *ctx) {
  enter_call(ctx);
  return 0;
}

static __always_inline void nccl_return(struct cw_frame *fr, struct cw_call_event *e, __u64 ret) {
  __u32 role = CW_COOKIE_NCCL_ROLE(fr->cookie);
  if (role == CW_NCCL_INIT_RANK && ret == 0) {
    __u64 comm = 0;
    bpf_probe_read_user(&comm, sizeof(comm), (void *)fr->regs[0]);
    struct cw_comm_info ci = {
        .hash = fr->extra[CW_X_COMM_HASH], .rank = (__u32)fr->regs[2], .nranks = (__u32)fr->regs[1], .seq = 0};
    struct cw_comm_key key = comm_key(comm);
    if (comm && bpf_map_update_elem(&comms, &key, &ci, BPF_ANY)) count_drop(CW_DROP_NCCL_MAP);
    e->extra[CW_X_RANKS] = ci.rank | ((__u64)ci.nranks << 32);
    e->extra[CW_X_OUT] = comm;
  } else if (role == CW_NCCL_INIT_ALL && ret == 0) {
    /* One process drives ndev ranks: no unique id, so the hash is derived from the first
     * handle (shared by all ranks of this communicator, distinct between communicators). */
    __u64 handles[8] = {};
    __u32 ndev = (__u32)fr->regs[1];
    if (ndev > 8) ndev = 8;
    if (bpf_probe_read_user(handles, sizeof(handles), (void *)fr->regs[0])) return;
    __u64 h = (handles[0] ^ 0xcbf29ce484222325ULL) * 0x100000001b3ULL;
    e->extra[CW_X_COMM_HASH] = h;
#pragma unroll
    for (__u32 i = 0; i < 8; i++) {
      if (i >= ndev) break;
      struct cw_comm_info ci = {.hash = h, .rank = i, .nranks = ndev, .seq = 0};
      struct cw_comm_key k = comm_key(handles[i]);
      if (k.comm && bpf_map_update_elem(&comms, &k, &ci, BPF_ANY)) count_drop(CW_DROP_NCCL_MAP);
    }
  } else if (role == CW_NCCL_DESTROY) {
    struct cw_comm_key key = comm_key(fr->regs[0]);
    bpf_map_delete_elem(&comms, &key);
  }
}

/* How far the stack pointer moves between a function's first instruction and its return: x86-64's
 * `call` pushed the return address, which `ret` pops; arm64 keeps it in the link register. */
#if defined(__TARGET_ARCH_arm64)
#define CW_RET_SP_DELTA 0
#else
#define CW_RET_SP_DELTA 8
#endif

/* The frame this return belongs to: the innermost saved frame whose entry stack pointer is the
 * return's minus CW_RET_SP_DELTA (on x86-64 the `ret` popped the return address). A register
 * compare, where asking the kernel for the attach cookie again is a helper call (~15 ns a call
 * here, docs/BENCHMARKS.md), and it pairs exactly: the same function called recursively still
 * has one frame per stack depth; a tail call and its caller share a stack pointer and return
 * together, innermost frame first, each record with its own op and start. Frames above the
 * match lost their return (longjmp, a C++ exception unwinding through a traced call): they are
 * dropped and counted. No match: the entry was not recorded, the depth stays. Returns the
 * frame's depth, or -1. */
static __always_inline int paired_frame(struct cw_task *t, __u64 sp) {
  __u32 depth = t->depth;
  if (depth == 0 || depth > CW_MAX_DEPTH) return -1;
#pragma unroll
  for (int k = CW_MAX_DEPTH - 1; k >= 0; k--) {
    if ((__u32)k >= depth) continue;
    if (t->f[k].sp + CW_RET_SP_DELTA == sp) {
      for (__u32 lost = depth - 1 - k; lost > 0 && lost < CW_MAX_DEPTH; lost--) count_drop(CW_DROP_UNPAIRED);
      t->depth = k;
      return k;
    }
  }
  return -1;
}

/* ================================ Aggregated calls ================================
 * A call of a fast_counted op (the op table's `recording` column, cookie bit 56) that explains
 * nothing (call_explains false, no error, not the process's first, nothing nested in it recorded,
 * the thread not switched out while it ran: mark_switched_out) leaves no record: it is counted per (process, op) — count, sum, min, max, first/last start,
 * the trace DB's histogram buckets — and, when outermost, in its thread's run (the record of the
 * thread's next recorded outermost call carries the run: how many, how long, from when to when).
 * The counters live in one of two per-CPU maps: call_agg_slots, an array whose index per
 * (process, op) is given out once (agg_free → agg_index) and cached in the thread's pairing slot, so a
 * counted call costs no map helper call — its lookup is inlined (the hash lookup per call it
 * replaces was the largest piece of the return's cost: docs/BENCHMARKS.md); when the array's entries are all given out,
 * call_agg, a hash by (process, op). The collector reads both each second and at stop into the
 * rollups (collector/call_agg.h).
 * A thread's run is closed at least every targ_run_max_ns (the call then recorded) so a long
 * launch loop still shows up in the timeline. --record-all (targ_record_all) records every call.
 * Why this loses nothing an answer needs: docs/COLLECTOR.md "Aggregated calls". */
const volatile __u64 targ_run_max_ns = 100000000;

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_HASH);
  __uint(max_entries, 1024);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, struct cw_agg_key);
  __type(value, struct cw_agg_value);
} call_agg SEC(".maps");

/* The array's entries, preallocated on every possible CPU: the loader sizes it to its memory
 * budget (collector/bpf_loader.cpp) and sets targ_agg_slots to the same. */
const volatile __u32 targ_agg_slots = 64;
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 64);
  __type(key, __u32);
  __type(value, struct cw_agg_value);
} call_agg_slots SEC(".maps");

/* (process, op) → its entry in call_agg_slots; kept for the whole trace. */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 1024);
  __type(key, struct cw_agg_key);
  __type(value, __u32);
} agg_index SEC(".maps");

/* The call_agg_slots entries not given out yet: the loader queues every index after load (a
 * pop is atomic, where an atomic add whose result is used needs a newer BPF ISA). */
struct {
  __uint(type, BPF_MAP_TYPE_QUEUE);
  __uint(max_entries, 64);
  __type(value, __u32);
} agg_free SEC(".maps");

/* What a thread's agg_where cache says besides the entry index + 1. */
#define CW_AGG_WHERE_HASH 0xffff

/* One all-zero value: a new call_agg entry is copied from it (15 KiB: not on the BPF stack). */
struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct cw_agg_value);
} call_agg_zero SEC(".maps");

/* The (process, op)'s counters in call_agg, made on its first call; null when the map is full. */
static __always_inline struct cw_agg_value *agg_hash_value(struct cw_agg_key *k) {
  struct cw_agg_value *v = bpf_map_lookup_elem(&call_agg, k);
  if (v) return v;
  __u32 zero = 0;
  struct cw_agg_value *z = bpf_map_lookup_elem(&call_agg_zero, &zero);
  if (!z) return 0;
  bpf_map_update_elem(&call_agg, k, z, BPF_NOEXIST);
  v = bpf_map_lookup_elem(&call_agg, k);
  if (!v) count_drop(CW_DROP_AGG_MAP);
  return v;
}

/* Where (tgid, op) is counted: its call_agg_slots entry + 1, or CW_AGG_WHERE_HASH. Asked once
 * per thread and op (the thread's cache); the first thread to ask gives the entry out. */
static __always_inline __u32 agg_where_first(struct cw_agg_key *k) {
  __u32 *known = bpf_map_lookup_elem(&agg_index, k);
  if (known) return *known + 1;
  __u32 idx;
  if (bpf_map_pop_elem(&agg_free, &idx) || idx >= targ_agg_slots) return CW_AGG_WHERE_HASH;
  if (bpf_map_update_elem(&agg_index, k, &idx, BPF_NOEXIST) == 0) return idx + 1;
  bpf_map_push_elem(&agg_free, &idx, 0); /* another thread gave it one first (or agg_index is full) */
  known = bpf_map_lookup_elem(&agg_index, k);
  return known ? *known + 1 : CW_AGG_WHERE_HASH;
}

/* The counters of (tgid, op) for this CPU. */
static __always_inline struct cw_agg_value *agg_value(struct cw_task *t, __u32 tgid, __u16 op) {
  __u32 *cached = &t->agg_where[op & (CW_AGG_CACHE - 1)];
  __u32 where = *cached;
  struct cw_agg_key k = {.pid = tgid, .op = op, ._pad = 0};
  if (where >> 16 != op || (where & 0xffff) == 0) {
    where = agg_where_first(&k);
    *cached = (__u32)op << 16 | where;
  }
  where &= 0xffff;
  if (where == CW_AGG_WHERE_HASH) return agg_hash_value(&k);
  __u32 idx = where - 1;
  return bpf_map_lookup_elem(&call_agg_slots, &idx);
}

/* Counts the call; false when no counters could be had (the call is then recorded). */
static __always_inline bool agg_count(struct cw_task *t, __u32 tgid, __u16 op, __u64 start, __u64 dur) {
  struct cw_agg_value *v = agg_value(t, tgid, op);
  if (!v) return false;
  if (v->count == 0 || dur < v->min_ns) v->min_ns = dur;
  if (v->count == 0) v->first_ns = start;
  if (dur > v->max_ns) v->max_ns = dur;
  v->count++;
  v->sum_ns += dur;
  v->last_ns = start;
  __u32 b = cw_agg_bucket(dur);
  barrier_var(b);
  if (b < CW_AGG_BUCKETS) v->hist[b]++;
  return true;
}

/* Whether this returning call is only counted (no record). Adds an outermost one to its
 * thread's run (run: the slot's, null when the lookup failed: then nothing is counted). */
static __always_inline bool aggregated(struct cw_task *t, struct cw_run *run, struct cw_frame *fr, int d, __u64 id,
                                       __u16 op, __u64 now, __u64 ret, bool explains) {
  __u64 dur = now - fr->ts;
  if (targ_record_all || !CW_COOKIE_AGG(fr->cookie) || explains || (__u32)ret != 0 || dur >= CW_AGG_MAX_NS ||
      fr->first_of_process || fr->nested_recorded || fr->switched_out || !run)
    return false;
  if (d == 0 && run->calls && now - run->first_ns >= targ_run_max_ns) return false;
  if (!agg_count(t, id >> 32, op, fr->ts, dur)) return false;
  if (d == 0) {
    if (run->calls == 0) {
      run->first_ns = fr->ts;
      run->tid = (__u32)id;
      run->pid = id >> 32;
    }
    run->calls++;
    run->ns += dur;
    run->last_end = now;
    run->op = op;
  }
  return true;
}

/* Called by cw_sched_switch (bpf/sched.bpf.h) for a traced thread leaving its CPU (current is
 * still that thread there): every open call of the thread is switched out inside, so none of
 * them is only counted. A row keeps the call's off-CPU time apart from its time on-CPU
 * (launch_bound and host_bound split the thread's time by it); a run carries only its calls'
 * summed time, which is on-CPU time only when no call in it left the CPU. One array lookup per
 * switch of a traced thread; nothing under --record-all, which records every call anyway. */
static __always_inline void mark_switched_out(void) {
  if (targ_record_all) return;
  __u32 tid = (__u32)bpf_get_current_pid_tgid();
  __u32 idx = tid & targ_task_mask;
  struct cw_task *t = bpf_map_lookup_elem(&tasks, &idx);
  if (!t || t->owner != tid) return;
  __u32 d = t->depth;
#pragma unroll
  for (__u32 k = 0; k < CW_MAX_DEPTH; k++)
    if (k < d) t->f[k].switched_out = 1;
}

/* The thread's run into the record of its outermost call (d == 0), and a fresh run. */
static __always_inline void take_run(struct cw_run *run, int d, struct cw_call_event *e) {
  e->_pad2 = 0;
  if (d != 0 || !run || run->calls == 0) {
    e->run_calls = 0;
    e->run_op = 0;
    e->run_ns = 0;
    e->run_first_ns = 0;
    e->run_last_end = 0;
    return;
  }
  e->run_calls = run->calls;
  e->run_op = run->op;
  e->run_ns = run->ns;
  e->run_first_ns = run->first_ns;
  e->run_last_end = run->last_end;
  run->calls = 0;
  run->ns = 0;
  run->first_ns = 0;
  run->last_end = 0;
}
/* ============================== end of aggregated calls ============================== */

/* The return of a traced call: the call's one ring record. */
static __always_inline void return_call(struct pt_regs *ctx) {
  __u64 now = bpf_ktime_get_ns();
  __u64 id = bpf_get_current_pid_tgid();
  __u32 tid = (__u32)id;
  __u32 idx = tid & targ_task_mask;
  struct cw_task *t = bpf_map_lookup_elem(&tasks, &idx);
  /* Not ours: the entry was filtered out (--pid) or its slot was busy (counted there). */
  if (!t || t->owner != tid) return;
  if (t->depth > CW_MAX_DEPTH) {
    t->depth--; /* a call nested deeper than the frames: counted at entry */
    return;
  }
  /* No frame: the entry was not recorded (probes going live while the call ran, or the trace
   * stopping). Nothing was lost that the trace had. */
  int d = paired_frame(t, PT_REGS_SP(ctx));
  if (d < 0) return;
  struct cw_frame *fr = &t->f[d & (CW_MAX_DEPTH - 1)];
  __u64 cookie = fr->cookie;

  __u16 op = CW_COOKIE_OP(cookie);
  __u32 tgid = id >> 32;
  __u64 ret = PT_REGS_RC(ctx);
  const bool explains = call_explains(ctx, &t->stack, tgid, op, fr->ts, now, d == 0);
  struct cw_run *run = bpf_map_lookup_elem(&runs, &idx);
  if (aggregated(t, run, fr, d, id, op, now, ret, explains)) return;
  /* The call it is nested in is recorded too: the timeline keeps the nesting whole. */
  if (d > 0) t->f[(d - 1) & (CW_MAX_DEPTH - 1)].nested_recorded = 1;
  /* Before the reservation: a reserved record holds the consumer back until submitted. */
  __u64 py_stack;
  __s32 stack_id = call_stack(ctx, explains, &py_stack);
  struct cw_call_event *e = bpf_ringbuf_reserve(&rb_calls, sizeof(*e), 0);
  if (!e) {
    count_drop(CW_DROP_RING_CALL);
    return;
  }
  __u8 src = CW_COOKIE_SRC(cookie);
  /* No cgroup here: it is per process, and the collector fills it from /proc (saves a helper
   * call on the hottest path). */
  fill_header_nocg(&e->hdr, id, fr->ts, op, CW_REC_CALL, src);
  e->dur_ns = now - fr->ts;
  e->ret = (__s32)ret; /* every traced API returns a 32-bit status enum */
  __builtin_memcpy(e->regs, fr->regs, sizeof(e->regs));
  if (copies_at_return(cookie)) {
    __builtin_memset(e->extra, 0, sizeof(e->extra));
    copy_arguments(e->extra, fr, cookie);
  } else
    __builtin_memcpy(e->extra, fr->extra, sizeof(e->extra));
  e->stack_id = stack_id;
  e->dclass = CW_COOKIE_CLASS(cookie);
  e->aux = CW_COOKIE_AUX(cookie);
  e->_pad1 = 0;
  e->py_stack = py_stack;
  take_run(run, d, e);
  __u32 out_reg = CW_COOKIE_OUT_REG(cookie);
  if (out_reg) {
    /* What the call wrote through its out argument (new pointer, graph, graph exec): only a
     * successful call wrote it. */
    __u64 out = 0;
    if ((__u32)ret == 0) bpf_probe_read_user(&out, sizeof(out), (void *)saved_reg(fr, out_reg));
    e->extra[CW_X_OUT] = out;
  }
  if (CW_COOKIE_NCCL_ROLE(cookie)) nccl_return(fr, e, (__u32)ret);
  /* A process seen for the first time gets the consumer now, not at its next 10 ms poll: it
   * snapshots the process's maps for symbolization while the process is still alive (a
   * short script can be gone before the poll). Once per process. */
  bpf_ringbuf_submit(e, fr->first_of_process ? BPF_RB_FORCE_WAKEUP : wake_flag(&rb_calls, targ_wake_calls));
}

SEC("uretprobe")
int cw_return(struct pt_regs *ctx) {
  return_call(ctx);
  return 0;
}

/* Session uprobes (kernel 6.13+, docs/COLLECTOR.md "Uprobe links"): one program attached once
 * runs at the entry and, when the entry returned CW_RUN_RETURN, again at the return. Weak: an
 * older kernel lacks the kfunc, and then this program is not loaded (collector/bpf_loader.cpp). */
extern bool bpf_session_is_return(void) __ksym __weak;

SEC("uprobe")
int cw_session(struct pt_regs *ctx) {
  if (bpf_session_is_return()) {
    return_call(ctx);
    return 0;
  }
  return enter_call(ctx);
}
