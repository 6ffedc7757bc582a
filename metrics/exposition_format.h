// Pieces of the text exposition format shared by the call families (metrics/exposition.cpp)
// and the request families (metrics/request_exposition.cpp).
#pragma once

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace causeway::prom_format {

// Shortest round-trip form of a double, printed the way Prometheus' own clients (Go's
// FormatFloat 'g', -1) print it — "1e-06", "2.5e-05", "0.00025", "10" — so le labels match
// what dashboards and recording rules expect.
inline std::string number(double v) {
  char buf[40];
  int digits = 17;
  for (int p = 1; p <= 17; ++p) {
    std::snprintf(buf, sizeof buf, "%.*e", p - 1, v);
    if (std::strtod(buf, nullptr) == v) {
      digits = p;
      break;
    }
  }
  std::snprintf(buf, sizeof buf, "%.*e", digits - 1, v);
  const int exp = std::atoi(std::strchr(buf, 'e') + 1);
  if (exp < -4 || exp >= 6) return buf;
  std::snprintf(buf, sizeof buf, "%.*f", std::max(0, digits - 1 - exp), v);
  return buf;
}

// HELP then TYPE, once per family, before its samples.
inline void family_header(std::string& out, const char* name, const char* type, const char* help) {
  out += "# HELP ";
  out += name;
  out += ' ';
  out += help;
  out += "\n# TYPE ";
  out += name;
  out += ' ';
  out += type;
  out += '\n';
}

}  // namespace causeway::prom_format
