// The tensor-parallel rank an inference engine writes into its worker's process title, for
// workers whose rank reaches NCCL as a Python argument instead of a launcher variable (vLLM
// V1's multiproc executor, SGLang's schedulers). Both set the title with setproctitle, which
// rewrites /proc/PID/cmdline (comm keeps only its first 15 bytes, cutting the rank off):
//   vLLM V1     "<VLLM_PROCESS_NAME_PREFIX, default VLLM>::Worker[_DPn][_PPn][_PCPn][_TPn][_DCPn][_EPn]"
//   SGLang      "sglang::scheduler[_DPn][_PPn][_TPn][_EPn]" (older: "..._DPn_TPn_PPn")
// The title is written by the traced process: parsed strictly (a small alphabet, bounded
// numbers) and used only to number ranks, never shown (docs/INFERENCE.md "How ranks are found").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace causeway {

struct EngineTitle {
  // The workers of one tensor-parallel group share it: the title without its TP / EP / DCP
  // ranks ("VLLM::Worker", "VLLM::Worker_PP1", "sglang::scheduler_DP0").
  std::string group;
  int32_t tp_rank = -1;
};

// cmdline: /proc/PID/cmdline with its NULs turned to spaces (the processes table's cmdline).
// nullopt unless it is an engine title with exactly one TP rank.
std::optional<EngineTitle> parse_engine_title(std::string_view cmdline);

}  // namespace causeway
