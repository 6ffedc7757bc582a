// Functions inside causeway itself that selftest and check probe, so both work on any host
// without CUDA installed.
#pragma once

#include <cstdint>
#include <string>

#include "common/result.h"

namespace causeway::collector {

// Busy-waits spin_ns and returns 0; never inlined, so it has an address to probe.
extern "C" int causeway_selftest_call(uint64_t stream, uint64_t spin_ns);

struct CodeLocation {
  std::string binary;   // the file mapping the function
  uint64_t offset = 0;  // file offset of its first byte
};
// Where causeway_selftest_call lives in this process, from /proc/self/maps (works on a
// stripped binary: no symbol table needed).
Result<CodeLocation> selftest_call_location();

// Does nothing, never inlined: the site a uprobe trap is timed on (BpfObject::libc_trap_ns),
// which nothing else probes (check's selftest probes causeway_selftest_call meanwhile).
extern "C" void causeway_trap_site(uint64_t v);
Result<CodeLocation> trap_site_location();

}  // namespace causeway::collector
