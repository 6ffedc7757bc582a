#include "diagnosis/frames.h"

#include <algorithm>
#include <array>
#include <cctype>

#include "common/sanitize.h"
#include "common/stack_text.h"

namespace causeway {
namespace {

std::string_view base_of(std::string_view path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// "file:LINE" at the end of s: (file, line).
std::optional<std::pair<std::string, int>> split_file_line(std::string_view s) {
  const size_t colon = s.find_last_of(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == s.size()) return std::nullopt;
  int line = 0;
  for (char c : s.substr(colon + 1)) {
    if (!std::isdigit(static_cast<unsigned char>(c)) || line > 100'000'000) return std::nullopt;
    line = line * 10 + (c - '0');
  }
  return std::make_pair(std::string(s.substr(0, colon)), line);
}

// Modules that are never the user's call site: the traced libraries and the other GPU
// libraries, the C/C++ runtime, the loader, the FFI layer, the CPython interpreter and the
// PyTorch runtime under it.
bool is_system_module(std::string_view m) {
  static constexpr std::array<std::string_view, 23> kPrefixes = {
      "libcudart", "libcuda.", "libnccl", "libcublas", "libcudnn", "libnvrtc", "libcufft", "libcusparse", "libcurand",
      "libc.so", "libc-", "libstdc++", "libgcc_s", "libffi", "libpthread", "ld-linux", "libpython", "python",
      "libtorch", "libc10", "[vdso]", "[vsyscall]", "libm.so"};
  return std::any_of(kPrefixes.begin(), kPrefixes.end(), [&](std::string_view p) { return m.rfind(p, 0) == 0; });
}

}  // namespace

std::optional<Frame> parse_frame(std::string_view text) {
  if (text == kStackCutMarker) return std::nullopt;
  Frame f;
  f.text = std::string(text);
  std::string_view body = text;
  std::optional<std::pair<std::string, int>> where;
  // Trailing " (...)": a Python frame's function, or a native frame's (file:line).
  if (!text.empty() && text.back() == ')') {
    const size_t open = text.rfind(" (");
    if (open != std::string_view::npos) {
      const std::string_view inner = text.substr(open + 2, text.size() - open - 3);
      const std::string_view head = text.substr(0, open);
      if (auto fl = split_file_line(head); fl && head.find('!') == std::string_view::npos) {
        f.kind = FrameKind::python;
        f.function = std::string(inner);
        f.file = fl->first;
        f.line = fl->second;
        std::string_view mod = base_of(fl->first);
        if (mod.size() > 3 && mod.substr(mod.size() - 3) == ".py") mod.remove_suffix(3);
        f.module = std::string(mod);
        return f;
      }
      if ((where = split_file_line(inner))) body = head;
    }
  }
  if (body.rfind("[k]", 0) == 0 || body.rfind("[kernel]", 0) == 0) f.kind = FrameKind::kernel;
  const size_t bang = body.find('!');
  if (bang != std::string_view::npos) {
    f.module = std::string(body.substr(0, bang));
    std::string_view fn = body.substr(bang + 1);
    if (const size_t plus = fn.rfind("+0x"); plus != std::string_view::npos) fn = fn.substr(0, plus);
    f.function = std::string(fn);
  } else if (const size_t plus = body.rfind("+0x"); plus != std::string_view::npos) {
    f.module = std::string(body.substr(0, plus));
    f.function = std::string(body.substr(plus + 1));  // no symbol: the offset in the module
  } else {
    f.function = std::string(body);
  }
  if (where) {
    f.file = where->first;
    f.line = where->second;
  }
  return f;
}

ParsedStack parse_stack(const std::vector<std::string>& texts) {
  ParsedStack out;
  for (const auto& t : texts) {
    if (auto f = parse_frame(t)) out.frames.push_back(std::move(*f));
    else out.cut = true;
  }
  return out;
}

size_t user_frame_index(const std::vector<Frame>& frames) {
  for (size_t i = 0; i < frames.size(); ++i)
    if (frames[i].kind == FrameKind::python) return i;
  for (size_t i = 0; i < frames.size(); ++i)
    if (frames[i].kind == FrameKind::native && !frames[i].module.empty() && !is_system_module(frames[i].module))
      return i;
  return frames.size();
}

std::vector<Frame> user_first(std::vector<Frame> frames) {
  const size_t u = user_frame_index(frames);
  if (u < frames.size() && u > 0)
    std::rotate(frames.begin(), frames.begin() + static_cast<std::ptrdiff_t>(u),
                frames.begin() + static_cast<std::ptrdiff_t>(u) + 1);
  return frames;
}

std::vector<std::string> user_first_texts(const std::vector<std::string>& texts) {
  std::vector<std::string> out;
  for (Frame& f : user_first(parse_stack(texts).frames)) out.push_back(std::move(f.text));
  return out;
}

nlohmann::json frame_to_json(const Frame& f) {
  static constexpr std::array<const char*, 3> kKinds = {"python", "native", "kernel"};
  // Frames are stacks.frames text from the DB (symbols and file names of traced programs).
  return {{"function", sanitize_untrusted(f.function, 256)},
          {"file", f.file ? nlohmann::json(sanitize_untrusted(*f.file, 256)) : nlohmann::json(nullptr)},
          {"line", f.line},
          {"module", sanitize_untrusted(f.module, 128)},
          {"kind", kKinds[static_cast<size_t>(f.kind)]}};
}

std::string frame_json_text(const nlohmann::json& f) {
  if (!f.is_object()) return f.is_string() ? f.get<std::string>() : f.dump();
  const std::string fn = f.value("function", ""), mod = f.value("module", "");
  const std::string file = f["file"].is_string() ? f["file"].get<std::string>() : "";
  const int line = f.value("line", 0);
  if (f.value("kind", "") == "python") return python_frame_text(file, line, fn);
  std::string s = mod.empty() ? fn : mod + "!" + fn;
  if (!file.empty()) s += " (" + file + ":" + std::to_string(line) + ")";
  return s;
}

}  // namespace causeway
