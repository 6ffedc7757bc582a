// The call site an assistant should look at: the innermost frame of the user's code, not the
// innermost frame of the stack (which sits inside libcudart or libnccl).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace causeway::mcp {

// One frame as text: a string frame as is; an object frame from its symbol/function and
// module/file fields.
std::string frame_text(const nlohmann::json& frame);

// Whether the frame belongs to a runtime layer rather than to the user's code: CUDA, NCCL
// and other GPU libraries, libc and the C++ runtime, the dynamic loader, Python's interpreter
// and the PyTorch runtime under it.
bool runtime_frame(const std::string& frame);

// Index of the first frame (innermost first) outside those layers; nullopt when every frame
// is a runtime frame.
std::optional<size_t> innermost_user_frame(const nlohmann::json& stack);

}  // namespace causeway::mcp
