// Forward passes of a one-GPU engine from its threads' CUDA calls (diagnosis/forward_passes.h,
// docs/INFERENCE.md "Forward passes (steps)") on synthetic call sequences; prefill_interference
// measured on them from a real trace DB: tests/unit/test_request_engine_causes.cpp.
#include <doctest/doctest.h>

#include "diagnosis/forward_passes.h"
#include "tracedb/op_catalog.h"

using namespace causeway;
using namespace causeway::requests;

namespace {

uint16_t op(const char* name) {
  const OpInfo* o = find_op(name);
  REQUIRE(o != nullptr);
  return o->id;
}

PassCall call(const char* name, uint32_t tid, int64_t at_us, int64_t dur_us, std::array<int64_t, 6> a = {}) {
  return PassCall{at_us * 1000, dur_us * 1000, 7, tid, op(name), a};
}

}  // namespace

TEST_CASE("forward passes: one thread's launches up to the sync that waits for them") {
  const std::vector<PassCall> calls = {
      call("cudaStreamSynchronize", 1, 0, 5),  // nothing launched yet: not a pass
      call("cudaLaunchKernel", 1, 100, 5), call("cudaLaunchKernel", 1, 110, 5), call("cudaLaunchKernel", 1, 120, 5),
      call("cudaStreamSynchronize", 1, 130, 20'000),
      call("cudaLaunchKernel", 1, 20'200, 5), call("cudaDeviceSynchronize", 1, 20'210, 300'000),
      call("cudaEventSynchronize", 1, 320'300, 1),  // nothing launched since the last wait
  };
  PassScan s = find_forward_passes(calls);
  REQUIRE(s.passes.size() == 2);
  CHECK(s.passes[0].start_ns == 100'000);
  CHECK(s.passes[0].end_ns == 20'130'000);
  CHECK(s.passes[0].launches == 3);
  CHECK_FALSE(s.passes[0].graph);
  CHECK(s.passes[1].dur_ns() == 300'010'000);
  CHECK(s.undelimited_tids.empty());
  CHECK(median_pass_ns(s.passes) == 300'010'000);  // nearest rank above the middle of two
}

TEST_CASE("forward passes: interleaved threads are delimited each by its own sync") {
  // The engine thread (1) and another thread (2) launch on their own streams; 2's sync
  // never ends 1's pass, and 1's launches after 2's sync still belong to 1's open pass.
  const std::vector<PassCall> calls = {
      call("cudaLaunchKernel", 1, 0, 5),
      call("cudaLaunchKernel", 2, 10, 5),
      call("cudaStreamSynchronize", 2, 20, 1'000),
      call("cudaLaunchKernel", 1, 1'100, 5),
      call("cudaLaunchKernel", 2, 1'200, 5),
      call("cudaStreamSynchronize", 1, 1'300, 50'000),
      call("cudaStreamSynchronize", 2, 1'400, 2'000),
  };
  PassScan s = find_forward_passes(calls);
  REQUIRE(s.passes.size() == 3);
  CHECK(s.passes[0].tid == 1);
  CHECK(s.passes[0].start_ns == 0);
  CHECK(s.passes[0].end_ns == 51'300'000);
  CHECK(s.passes[0].launches == 2);
  CHECK(s.passes[1].tid == 2);
  CHECK(s.passes[1].end_ns == 1'020'000);
  CHECK(s.passes[2].tid == 2);
  CHECK(s.passes[2].start_ns == 1'200'000);
  CHECK(s.passes[2].end_ns == 3'400'000);
}

TEST_CASE("forward passes: graph launches, closed by the blocking copy of the sampled tokens, not by an input copy") {
  const int64_t kHtoD = 1, kDtoH = 2;
  const std::vector<PassCall> calls = {
      call("cudaGraphLaunch", 1, 0, 10),
      call("cudaMemcpy", 1, 20, 100, {64, 0x1000, kHtoD, 0, 0, 0}),  // the next inputs: the GPU still runs
      call("cudaMemcpy", 1, 200, 15'000, {64, 0x2000, kDtoH, 0, 0, 0}),
      call("cudaLaunchKernel", 1, 16'000, 5), call("cudaGraphLaunch", 1, 16'010, 10),
      call("cudaMemcpy", 1, 16'100, 9'000, {64, 0x2000, kDtoH, 0, 0, 0}),
  };
  PassScan s = find_forward_passes(calls);
  REQUIRE(s.passes.size() == 2);
  CHECK(s.passes[0].graph);
  CHECK(s.passes[0].launches == 1);
  CHECK(s.passes[0].end_ns == 15'200'000);
  CHECK(s.passes[1].graph);
  CHECK(s.passes[1].launches == 2);
  CHECK(s.passes[1].dur_ns() == 9'100'000);
}

TEST_CASE("forward passes: launches no sync waits for cannot be delimited") {
  // Asynchronous scheduling: the engine polls an event instead of waiting (not traced as a
  // wait), so its launches are never closed.
  std::vector<PassCall> calls;
  for (int k = 0; k < 20; ++k) calls.push_back(call("cudaLaunchKernel", 3, k * 20'000, 5));
  calls.push_back(call("cudaLaunchKernel", 4, 5, 5));
  calls.push_back(call("cudaStreamSynchronize", 4, 100, 10'000));
  calls.push_back(call("cudaLaunchKernel", 4, 20'000, 5));  // open at the end: dropped
  PassScan s = find_forward_passes(calls);
  REQUIRE(s.passes.size() == 1);
  CHECK(s.passes[0].tid == 4);
  CHECK(s.undelimited_tids == std::vector<uint32_t>{3});
  CHECK(find_forward_passes({}).passes.empty());
  CHECK(median_pass_ns({}) == 0);
}
