// Shared by the fake CUDA/NCCL libraries: a configurable busy-wait so traced calls have a
// known duration. Latency comes from CW_FAKE_LATENCY_NS at load, or cwfake_set_latency_ns().
#pragma once

#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#define CWFAKE_EXPORT __attribute__((visibility("default"), noinline))

static inline uint64_t cwfake_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline void cwfake_spin_ns(uint64_t ns) {
  if (!ns) return;
  uint64_t end = cwfake_now_ns() + ns;
  while (cwfake_now_ns() < end) {
  }
}

static inline uint64_t cwfake_env_latency(void) {
  const char* s = getenv("CW_FAKE_LATENCY_NS");
  return s ? strtoull(s, 0, 10) : 0;
}
