#include "sqlguard/safe_functions.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace causeway::sqlguard {
namespace {

constexpr int kLeading = 1;
constexpr int kTrailing = 2;
// Below this many byte pairs the naive scan is cheap; above it, a charset "character"
// longer than 4 bytes (malformed UTF-8) has no fast path and the call is refused.
constexpr uint64_t kNaiveBudget = 10'000'000;

// Splits like SQLite's SQLITE_SKIP_UTF8: a lead byte and the 0x80-0xBF bytes after it.
std::vector<std::string_view> split_chars(std::string_view s) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < s.size()) {
    size_t j = i + 1;
    if (static_cast<unsigned char>(s[i]) >= 0xC0)
      while (j < s.size() && (static_cast<unsigned char>(s[j]) & 0xC0) == 0x80) ++j;
    out.push_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

uint64_t pack(std::string_view c) {
  uint64_t v = c.size();
  for (char b : c) v = (v << 8) | static_cast<unsigned char>(b);
  return v;
}

void trim_impl(sqlite3_context* ctx, int argc, sqlite3_value** argv) {
  const int flags = static_cast<int>(reinterpret_cast<intptr_t>(sqlite3_user_data(ctx)));
  if (sqlite3_value_type(argv[0]) == SQLITE_NULL) return;
  const char* in_ptr = reinterpret_cast<const char*>(sqlite3_value_text(argv[0]));
  if (!in_ptr) return;
  std::string_view in(in_ptr, static_cast<size_t>(sqlite3_value_bytes(argv[0])));
  std::string_view set = " ";
  if (argc == 2) {
    if (sqlite3_value_type(argv[1]) == SQLITE_NULL) return;
    const char* set_ptr = reinterpret_cast<const char*>(sqlite3_value_text(argv[1]));
    if (!set_ptr) return;
    set = std::string_view(set_ptr, static_cast<size_t>(sqlite3_value_bytes(argv[1])));
  }
  std::vector<std::string_view> chars = split_chars(set);
  bool short_chars = true;
  for (auto c : chars) short_chars = short_chars && c.size() <= 4;
  const bool naive = static_cast<uint64_t>(in.size()) * set.size() <= kNaiveBudget;
  if (!naive && !short_chars) {
    sqlite3_result_error(ctx, "trim(): character set is not valid UTF-8 and too large to scan", -1);
    sqlite3_result_error_code(ctx, SQLITE_TOOBIG);
    return;
  }
  std::unordered_set<uint64_t> packed;
  if (!naive)
    for (auto c : chars) packed.insert(pack(c));
  // Length of the charset character matching `in` at [pos] (leading) or ending at
  // [pos] (trailing), 0 when none — same first-match rule as SQLite.
  auto match = [&](size_t pos, bool at_end) -> size_t {
    if (naive) {
      for (auto c : chars) {
        if (c.size() > (at_end ? pos : in.size() - pos)) continue;
        const char* p = at_end ? in.data() + pos - c.size() : in.data() + pos;
        if (std::memcmp(p, c.data(), c.size()) == 0) return c.size();
      }
      return 0;
    }
    for (size_t len = 1; len <= 4; ++len) {
      if (len > (at_end ? pos : in.size() - pos)) break;
      std::string_view cand = at_end ? in.substr(pos - len, len) : in.substr(pos, len);
      if (packed.count(pack(cand))) return len;
    }
    return 0;
  };
  size_t begin = 0, end = in.size();
  if (!chars.empty()) {
    if (flags & kLeading)
      while (begin < end) {
        size_t n = match(begin, false);
        if (n == 0 || begin + n > end) break;
        begin += n;
      }
    if (flags & kTrailing)
      while (end > begin) {
        size_t n = match(end, true);
        if (n == 0 || end - n < begin) break;
        end -= n;
      }
  }
  sqlite3_result_text(ctx, in.data() + begin, static_cast<int>(end - begin), SQLITE_TRANSIENT);
}

// The built-in printf, reached through a private in-memory connection once the arguments
// are known to be safe. One prepared "SELECT printf(?1, ..., ?n)" per argument count.
class PrintfDelegate {
 public:
  PrintfDelegate(sqlite3* mem, int length_limit) : mem_(mem), length_limit_(length_limit) {
    sqlite3_limit(mem_, SQLITE_LIMIT_LENGTH, length_limit);
  }
  ~PrintfDelegate() {
    for (sqlite3_stmt* st : stmts_) sqlite3_finalize(st);
    sqlite3_close_v2(mem_);
  }
  PrintfDelegate(const PrintfDelegate&) = delete;
  PrintfDelegate& operator=(const PrintfDelegate&) = delete;

  int length_limit() const { return length_limit_; }

  void call(sqlite3_context* ctx, int argc, sqlite3_value** argv) {
    if (static_cast<size_t>(argc) >= stmts_.size()) stmts_.resize(static_cast<size_t>(argc) + 1, nullptr);
    sqlite3_stmt*& st = stmts_[static_cast<size_t>(argc)];
    if (!st) {
      std::string sql = "SELECT printf(";
      for (int i = 1; i <= argc; ++i) sql += (i > 1 ? ",?" : "?") + std::to_string(i);
      sql += ")";
      if (sqlite3_prepare_v2(mem_, sql.c_str(), -1, &st, nullptr) != SQLITE_OK) {
        sqlite3_result_error(ctx, sqlite3_errmsg(mem_), -1);
        return;
      }
    }
    for (int i = 0; i < argc; ++i) sqlite3_bind_value(st, i + 1, argv[i]);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) sqlite3_result_value(ctx, sqlite3_column_value(st, 0));
    else if ((rc & 0xFF) == SQLITE_TOOBIG) sqlite3_result_error_toobig(ctx);
    else if ((rc & 0xFF) == SQLITE_NOMEM) sqlite3_result_error_nomem(ctx);
    else sqlite3_result_error(ctx, sqlite3_errmsg(mem_), -1);
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
  }

 private:
  sqlite3* mem_;
  int length_limit_;
  std::vector<sqlite3_stmt*> stmts_;
};

// Walks a printf format the way SQLite's printf consumes its arguments and returns the
// first width or precision above `limit` (literal or from a "*" argument), or 0.
int64_t oversized_width(std::string_view fmt, int argc, sqlite3_value** argv, int64_t limit) {
  int next_arg = 1;
  auto int_arg = [&]() -> int64_t {
    if (next_arg >= argc) return 0;
    int64_t v = sqlite3_value_int64(argv[next_arg++]);
    return v < 0 ? (v == INT64_MIN ? INT64_MAX : -v) : v;
  };
  auto number = [&](size_t& i) -> int64_t {
    int64_t v = 0;
    while (i < fmt.size() && fmt[i] >= '0' && fmt[i] <= '9') {
      v = v * 10 + (fmt[i] - '0');
      if (v > limit) v = limit + 1;  // saturate: any longer digit run is too large anyway
      ++i;
    }
    return v;
  };
  for (size_t i = 0; i < fmt.size(); ++i) {
    if (fmt[i] != '%') continue;
    ++i;
    while (i < fmt.size() && std::strchr("-+ #!0,", fmt[i]) && fmt[i] != 0) ++i;
    int64_t width = 0, precision = 0;
    if (i < fmt.size() && fmt[i] == '*') {
      width = int_arg();
      ++i;
    } else {
      width = number(i);
    }
    if (i < fmt.size() && fmt[i] == '.') {
      ++i;
      if (i < fmt.size() && fmt[i] == '*') {
        precision = int_arg();
        ++i;
      } else {
        precision = number(i);
      }
    }
    while (i < fmt.size() && fmt[i] == 'l') ++i;
    if (width > limit || precision > limit) return std::max(width, precision);
    if (i >= fmt.size()) break;
    char conv = fmt[i];
    if (conv == '%') continue;
    if (!((conv >= 'a' && conv <= 'z') || (conv >= 'A' && conv <= 'Z'))) break;  // SQLite stops here too
    ++next_arg;
  }
  return 0;
}

// printf and format share one delegate; each registration holds a reference.
using DelegateRef = std::shared_ptr<PrintfDelegate>;

void printf_impl(sqlite3_context* ctx, int argc, sqlite3_value** argv) {
  PrintfDelegate* d = static_cast<DelegateRef*>(sqlite3_user_data(ctx))->get();
  if (argc < 1) return;
  const char* fmt = reinterpret_cast<const char*>(sqlite3_value_text(argv[0]));
  if (!fmt) return;  // printf(NULL) is NULL
  std::string_view f(fmt, static_cast<size_t>(sqlite3_value_bytes(argv[0])));
  if (int64_t w = oversized_width(f, argc, argv, d->length_limit()); w > 0) {
    std::string msg = "printf(): width or precision " + std::to_string(w) + " exceeds the " +
                      std::to_string(d->length_limit()) + "-byte value limit";
    sqlite3_result_error(ctx, msg.c_str(), -1);
    sqlite3_result_error_code(ctx, SQLITE_TOOBIG);
    return;
  }
  d->call(ctx, argc, argv);
}

void destroy_delegate(void* p) { delete static_cast<DelegateRef*>(p); }

}  // namespace

Result<void> register_safe_functions(sqlite3* db) {
  struct Fn {
    const char* name;
    int flags;
  };
  static constexpr Fn kFns[] = {{"trim", kLeading | kTrailing}, {"ltrim", kLeading}, {"rtrim", kTrailing}};
  const int text_flags = SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS;
  for (const Fn& f : kFns)
    for (int argc = 1; argc <= 2; ++argc)
      if (sqlite3_create_function_v2(db, f.name, argc, text_flags, reinterpret_cast<void*>(intptr_t{f.flags}),
                                     &trim_impl, nullptr, nullptr, nullptr) != SQLITE_OK)
        return make_error("sql_error", std::string("cannot register ") + f.name + "() on the query connection");
  sqlite3* mem = nullptr;
  if (sqlite3_open_v2(":memory:", &mem, SQLITE_OPEN_READWRITE | SQLITE_OPEN_MEMORY, nullptr) != SQLITE_OK) {
    sqlite3_close_v2(mem);
    return make_error("sql_error", "cannot open the in-memory connection behind printf()");
  }
  auto delegate = std::make_shared<PrintfDelegate>(mem, sqlite3_limit(db, SQLITE_LIMIT_LENGTH, -1));
  for (const char* name : {"printf", "format"}) {
    // On failure sqlite3_create_function_v2 calls destroy_delegate itself.
    if (sqlite3_create_function_v2(db, name, -1, text_flags, new DelegateRef(delegate), &printf_impl, nullptr, nullptr,
                                   &destroy_delegate) != SQLITE_OK)
      return make_error("sql_error", std::string("cannot register ") + name + "() on the query connection");
  }
  return {};
}

}  // namespace causeway::sqlguard
