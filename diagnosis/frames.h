// Stack frames as readers present them: the stored text (common/stack_text.h) parsed into
// {function, file, line, module, kind}, and the order a person reads a call site in — the
// innermost *user* frame first (the Python line, else the first native frame outside
// CUDA/NCCL/libc/the interpreter), then the other frames, innermost first.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace causeway {

enum class FrameKind { python, native, kernel };

struct Frame {
  std::string text;                 // as stored
  std::string function;
  std::optional<std::string> file;
  int line = 0;                     // 0: unknown
  std::string module;
  FrameKind kind = FrameKind::native;
};

// nullopt for the "native unwind stopped" mark, which is not a frame.
std::optional<Frame> parse_frame(std::string_view text);

struct ParsedStack {
  std::vector<Frame> frames;  // innermost first, as stored
  bool cut = false;           // the native walk stopped at a frame outside mapped code
};
ParsedStack parse_stack(const std::vector<std::string>& texts);

// Index of the innermost user frame; frames.size() when there is none.
size_t user_frame_index(const std::vector<Frame>& frames);
// The user frame moved to the front, the rest in their order.
std::vector<Frame> user_first(std::vector<Frame> frames);
// The stored texts in user-first order, without the cut mark.
std::vector<std::string> user_first_texts(const std::vector<std::string>& texts);

// {"function", "file" (null when unknown), "line", "module", "kind"}.
nlohmann::json frame_to_json(const Frame& f);
// One line for a frame object of frame_to_json: its stored text form.
std::string frame_json_text(const nlohmann::json& f);

}  // namespace causeway
