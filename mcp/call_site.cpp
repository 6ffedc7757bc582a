#include "mcp/call_site.h"

#include <array>
#include <string_view>

namespace causeway::mcp {

std::string frame_text(const nlohmann::json& frame) {
  if (frame.is_string()) return frame.get<std::string>();
  if (!frame.is_object()) return frame.dump();
  auto field = [&](std::initializer_list<const char*> keys) {
    for (const char* k : keys)
      if (frame.contains(k) && frame[k].is_string()) return frame[k].get<std::string>();
    return std::string();
  };
  std::string module = field({"module", "file", "object"});
  std::string symbol = field({"symbol", "function", "name"});
  return module.empty() ? symbol : module + "!" + symbol;
}

bool runtime_frame(const std::string& frame) {
  // Frames read "module!symbol+off"; a frame without a module ("train.py:142 (…)") is source.
  size_t bang = frame.find('!');
  if (bang == std::string::npos) return false;
  std::string_view module(frame.data(), bang);
  if (size_t slash = module.rfind('/'); slash != std::string_view::npos) module.remove_prefix(slash + 1);
  static constexpr std::array<std::string_view, 20> kRuntime = {
      "libcuda", "libcudart", "libcublas", "libcudnn", "libnccl", "libnvrtc", "libcufft", "libcusparse", "libcurand",
      "libc.so", "libc-", "libpthread", "libstdc++", "libgcc", "ld-linux", "libpython", "python", "libtorch", "libc10",
      "[vdso]"};
  for (std::string_view r : kRuntime)
    if (module.substr(0, r.size()) == r) return true;
  return false;
}

std::optional<size_t> innermost_user_frame(const nlohmann::json& stack) {
  if (!stack.is_array()) return std::nullopt;
  for (size_t i = 0; i < stack.size(); ++i)
    if (!runtime_frame(frame_text(stack[i]))) return i;
  return std::nullopt;
}

}  // namespace causeway::mcp
