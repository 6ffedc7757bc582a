// How frames are written in the trace DB's `stacks.frames` (a JSON array of strings, innermost
// first), shared by the collector that writes them and the readers that parse them
// (diagnosis/frames.h):
//   native  "module!symbol+0xoff", "module+0xoff", "[vdso]+0x…", with " (file:line)" when the
//           reader resolved it from debug info
//   python  "path/to/file.py:LINE (qualified.function)"
//   cut     kStackCutMarker, last: the native frame-pointer walk left mapped code there, so
//           no made-up frame follows.
#pragma once

#include <string>
#include <string_view>

namespace causeway {

inline constexpr std::string_view kStackCutMarker = "[native unwind stopped: frame outside mapped code]";

inline std::string python_frame_text(std::string_view file, int line, std::string_view function) {
  return std::string(file) + ":" + std::to_string(line) + " (" + std::string(function) + ")";
}

}  // namespace causeway
