/* CPython frames of the calling thread, read from the interpreter's own thread state (the
 * native unwind dies in libffi / libtorch, which have no frame pointers).
 *
 * The collector fills py_procs for each CPython process it knows the layout of (version table
 * and, for 3.13, the interpreter's _Py_DebugOffsets; docs/COLLECTOR.md "Python frames"); other
 * processes are never read. The walk: _PyRuntime → interpreters.head → threads list → the
 * thread state whose thread_id (pthread_self(), the fs base on x86-64) is the current task's →
 * frame chain. Only code object pointers and instruction pointers are captured here; user space
 * reads names and line tables from the code object and computes the executing line.
 *
 * Stacks are deduplicated in py_stacks by an FNV hash of their (code, instr) pairs; the call
 * record carries the hash. */
#pragma once

#include "maps.bpf.h"

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 1024);
  __type(key, __u32); /* tgid */
  __type(value, struct cw_py_proc);
} py_procs SEC(".maps");

/* 8192 stacks × 520 B ≈ 4.1 MiB. */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 8192);
  __type(key, __u64);
  __type(value, struct cw_py_stack);
} py_stacks SEC(".maps");

/* Thread state found for a tid last time: re-checked (one read) before use, so a reused
 * address is never trusted. */
struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, 16384);
  __type(key, __u32);
  __type(value, __u64);
} py_tstates SEC(".maps");

/* Scratch: the stack being built and one frame's bytes (too big for the BPF stack). */
#define CW_PY_FRAME_BYTES 128
struct cw_py_scratch {
  struct cw_py_stack s;
  __u8 fr[CW_PY_FRAME_BYTES];
};
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct cw_py_scratch);
} py_scratch SEC(".maps");

/* Threads walked to find the current one (PyTorch: main + dataloader pin-memory threads). */
#define CW_PY_MAX_THREADS 64

static __always_inline __u64 py_read_ptr(__u64 addr) {
  __u64 v = 0;
  if (bpf_probe_read_user(&v, sizeof(v), (void *)addr)) return 0;
  return v;
}

static __always_inline __u64 py_field(const __u8 *fr, __u16 off) {
  if (off > CW_PY_FRAME_BYTES - 8) return 0;
  return *(const __u64 *)(fr + off);
}

static __always_inline __u64 py_thread_base(void) {
#if defined(__TARGET_ARCH_x86)
  struct task_struct *task = bpf_get_current_task_btf();
  return BPF_CORE_READ(task, thread.fsbase);
#else
  return 0; /* arm64: tpidr_el0; not supported yet */
#endif
}

struct py_find_ctx {
  const struct cw_py_proc *p;
  __u64 base;
  __u64 ts;
  __u64 found;
};

static long py_find_step(__u64 i, void *arg) {
  struct py_find_ctx *c = arg;
  if (!c->ts) return 1;
  if (py_read_ptr(c->ts + c->p->ts_thread_id) == c->base) {
    c->found = c->ts;
    return 1;
  }
  c->ts = py_read_ptr(c->ts + c->p->ts_next);
  return 0;
}

static __always_inline __u64 py_find_tstate(const struct cw_py_proc *p, __u32 tid, __u64 base) {
  __u64 *cached = bpf_map_lookup_elem(&py_tstates, &tid);
  if (cached && *cached && py_read_ptr(*cached + p->ts_thread_id) == base) return *cached;
  __u64 interp = py_read_ptr(p->runtime + p->interp_head);
  if (!interp) return 0;
  struct py_find_ctx c = {.p = p, .base = base, .ts = py_read_ptr(interp + p->threads_head), .found = 0};
  /* bpf_loop: the verifier checks the body once, not once per iteration. */
  bpf_loop(CW_PY_MAX_THREADS, py_find_step, &c, 0);
  if (c.found) bpf_map_update_elem(&py_tstates, &tid, &c.found, BPF_ANY);
  return c.found;
}

struct py_walk_ctx {
  const struct cw_py_proc *p;
  struct cw_py_scratch *sc;
  __u64 f;
  __u64 h;
  __u32 n;
};

static long py_walk_step(__u64 i, void *arg) {
  struct py_walk_ctx *c = arg;
  const struct cw_py_proc *p = c->p;
  struct cw_py_scratch *sc = c->sc;
  if (!c->f || bpf_probe_read_user(sc->fr, sizeof(sc->fr), (void *)c->f)) return 1;
  c->f = py_field(sc->fr, p->fr_previous);
  __u8 owner = 0;
  if (p->fr_owner < CW_PY_FRAME_BYTES) owner = sc->fr[p->fr_owner & (CW_PY_FRAME_BYTES - 1)];
  if (owner == 3) return 0; /* FRAME_OWNED_BY_CSTACK: an entry shim, no Python code */
  __u32 n = c->n;
  if (n >= CW_PY_DEPTH) return 1;
  __u64 code = py_field(sc->fr, p->fr_code);
  __u64 instr = py_field(sc->fr, p->fr_instr);
  if (p->instr_is_int) instr &= 0xffffffffULL;
  sc->s.code[n] = code;
  sc->s.instr[n] = instr;
  c->h = (c->h ^ code) * 0x100000001b3ULL;
  c->h = (c->h ^ instr) * 0x100000001b3ULL;
  c->n = n + 1;
  return 0;
}

/* Captures the current thread's Python stack; returns its key in py_stacks, 0 when the
 * process is not a known CPython or the thread has no Python frames. */
static __noinline __u64 cw_py_stack(void) {
  __u64 id = bpf_get_current_pid_tgid();
  __u32 tgid = id >> 32;
  struct cw_py_proc *p = bpf_map_lookup_elem(&py_procs, &tgid);
  if (!p) return 0;
  __u32 zero = 0;
  struct cw_py_scratch *sc = bpf_map_lookup_elem(&py_scratch, &zero);
  if (!sc) return 0;
  __u64 base = py_thread_base();
  if (!base) return 0;
  __u64 ts = py_find_tstate(p, (__u32)id, base);
  if (!ts) return 0;
  __u64 f = py_read_ptr(ts + p->ts_frame);
  if (p->cframe_frame != CW_PY_NONE && f) f = py_read_ptr(f + p->cframe_frame);

  struct py_walk_ctx c = {.p = p, .sc = sc, .f = f, .h = 0xcbf29ce484222325ULL, .n = 0};
  bpf_loop(CW_PY_DEPTH + 8, py_walk_step, &c, 0);
  __u32 n = c.n;
  __u64 h = c.h;
  if (n == 0) return 0;
  sc->s.depth = n;
  sc->s._pad = 0;
  h = (h ^ n) * 0x100000001b3ULL;
  if (!h) h = 1;
  if (!bpf_map_lookup_elem(&py_stacks, &h)) bpf_map_update_elem(&py_stacks, &h, &sc->s, BPF_NOEXIST);
  return h;
}
