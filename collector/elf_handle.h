// RAII for a libelf handle: elf_end on scope exit. Shared by the ELF readers of the collector.
#pragma once

#include <libelf.h>

#include <memory>

namespace causeway::collector {

struct ElfCloser {
  void operator()(Elf* e) const { elf_end(e); }
};
using ElfPtr = std::unique_ptr<Elf, ElfCloser>;

}  // namespace causeway::collector
