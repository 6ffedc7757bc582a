#include <doctest/doctest.h>

#include "common/sanitize.h"

using namespace causeway;

TEST_CASE("plain names pass through unchanged") {
  CHECK(sanitize_untrusted("python3") == "python3");
  CHECK(sanitize_untrusted("VLLM::EngineCor") == "VLLM::EngineCor");
  CHECK(sanitize_untrusted("données-π") == "données-π");
}

TEST_CASE("control characters are removed and whitespace controls become spaces") {
  CHECK(sanitize_untrusted("a\x1b[31mred\x1b[0m") == "a[31mred[0m");
  CHECK(sanitize_untrusted("line1\nline2\tx\r") == "line1 line2 x ");
  CHECK(sanitize_untrusted(std::string("nul\0byte", 8)) == "nulbyte");
  CHECK(sanitize_untrusted("del\x7f") == "del");
  CHECK(sanitize_untrusted("c1\xc2\x85x") == "c1x");  // U+0085 NEL
}

TEST_CASE("invisible and bidi-override characters used to hide instructions are removed") {
  CHECK(sanitize_untrusted("ig\xe2\x80\x8bnore") == "ignore");             // zero-width space
  CHECK(sanitize_untrusted("abc\xe2\x80\xaetxt.exe") == "abctxt.exe");       // RLO
  CHECK(sanitize_untrusted("\xef\xbb\xbfstart") == "start");                 // BOM
  CHECK(sanitize_untrusted("tag\xf3\xa0\x80\x81x") == "tagx");               // U+E0001 tag
  CHECK(sanitize_untrusted("iso\xe2\x81\xa6late") == "isolate");             // U+2066
}

TEST_CASE("invalid UTF-8 is replaced, never passed through") {
  CHECK(sanitize_untrusted("a\xff" "b") == "a\xef\xbf\xbd" "b");
  CHECK(sanitize_untrusted("\xc0\xaf") == "\xef\xbf\xbd\xef\xbf\xbd");  // overlong '/'
  CHECK(sanitize_untrusted("\xed\xa0\x80") == "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");  // surrogate
  CHECK(sanitize_untrusted("\xe2\x82") == "\xef\xbf\xbd\xef\xbf\xbd");  // truncated
}

TEST_CASE("length is capped on a code point boundary with an ellipsis") {
  std::string long_name(1000, 'x');
  std::string out = sanitize_untrusted(long_name, 64);
  CHECK(out.size() == 64 + 3);
  CHECK(out.substr(64) == "\xe2\x80\xa6");
  std::string greek;
  for (int i = 0; i < 100; ++i) greek += "\xce\xbb";  // λ, 2 bytes
  std::string g = sanitize_untrusted(greek, 11);
  CHECK(g.size() == 10 + 3);  // 5 whole λ, never half of one
}
