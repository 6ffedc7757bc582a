#include "mcp/json_schema.h"

#include <cmath>

namespace causeway::mcp {
namespace {

using json = nlohmann::json;

bool has_type(const json& v, const std::string& t) {
  if (t == "null") return v.is_null();
  if (t == "boolean") return v.is_boolean();
  if (t == "object") return v.is_object();
  if (t == "array") return v.is_array();
  if (t == "string") return v.is_string();
  if (t == "number") return v.is_number();
  if (t == "integer") {
    if (v.is_number_integer() || v.is_number_unsigned()) return true;
    return v.is_number_float() && std::floor(v.get<double>()) == v.get<double>();
  }
  return true;
}

std::string check(const json& v, const json& s, const std::string& at) {
  if (s.is_boolean()) return s.get<bool>() ? "" : at + ": not allowed";
  if (!s.is_object()) return "";
  const std::string where = at.empty() ? "/" : at;
  if (auto t = s.find("type"); t != s.end()) {
    bool ok = false;
    std::string names;
    if (t->is_string()) {
      ok = has_type(v, *t);
      names = t->get<std::string>();
    } else if (t->is_array()) {
      for (const auto& one : *t) {
        ok = ok || has_type(v, one.get<std::string>());
        names += (names.empty() ? "" : " or ") + one.get<std::string>();
      }
    } else {
      ok = true;
    }
    if (!ok) return where + ": must be " + names;
  }
  // anyOf: how our schemas say "a string or null" (a `type` array is legal but less portable:
  // clients that map schemas onto a single-type dialect reject it).
  if (auto any = s.find("anyOf"); any != s.end() && any->is_array()) {
    std::string first;
    bool ok = false;
    for (const auto& branch : *any) {
      std::string r = check(v, branch, at);
      if (r.empty()) {
        ok = true;
        break;
      }
      if (first.empty()) first = r;
    }
    if (!ok) return first.empty() ? where + ": matches no anyOf branch" : first;
  }
  if (auto e = s.find("enum"); e != s.end() && e->is_array()) {
    bool found = false;
    for (const auto& option : *e) found = found || option == v;
    if (!found) return where + ": must be one of " + e->dump();
  }
  if (auto c = s.find("const"); c != s.end() && *c != v) return where + ": must be " + c->dump();
  if (v.is_number()) {
    double x = v.get<double>();
    if (auto m = s.find("minimum"); m != s.end() && x < m->get<double>()) return where + ": must be >= " + m->dump();
    if (auto m = s.find("maximum"); m != s.end() && x > m->get<double>()) return where + ": must be <= " + m->dump();
    // Draft 2020-12's numeric form (get_request_latency's quantile: strictly inside (0, 1)).
    if (auto m = s.find("exclusiveMinimum"); m != s.end() && m->is_number() && x <= m->get<double>())
      return where + ": must be > " + m->dump();
    if (auto m = s.find("exclusiveMaximum"); m != s.end() && m->is_number() && x >= m->get<double>())
      return where + ": must be < " + m->dump();
  }
  if (v.is_string()) {
    // Length in code points, as JSON Schema counts it.
    size_t n = 0;
    for (unsigned char ch : v.get_ref<const std::string&>()) n += (ch & 0xC0) != 0x80;
    if (auto m = s.find("minLength"); m != s.end() && n < m->get<size_t>()) return where + ": too short";
    if (auto m = s.find("maxLength"); m != s.end() && n > m->get<size_t>())
      return where + ": longer than " + m->dump() + " characters";
  }
  if (v.is_array()) {
    if (auto m = s.find("minItems"); m != s.end() && v.size() < m->get<size_t>()) return where + ": too few items";
    if (auto m = s.find("maxItems"); m != s.end() && v.size() > m->get<size_t>()) return where + ": too many items";
    if (auto items = s.find("items"); items != s.end()) {
      for (size_t i = 0; i < v.size(); ++i) {
        std::string r = check(v[i], *items, at + "/" + std::to_string(i));
        if (!r.empty()) return r;
      }
    }
  }
  if (v.is_object()) {
    if (auto req = s.find("required"); req != s.end()) {
      for (const auto& name : *req)
        if (!v.contains(name.get<std::string>())) return where + ": missing required property \"" + name.get<std::string>() + "\"";
    }
    const json* props = s.contains("properties") ? &s["properties"] : nullptr;
    auto extra = s.find("additionalProperties");
    for (auto it = v.begin(); it != v.end(); ++it) {
      if (props && props->contains(it.key())) {
        std::string r = check(it.value(), (*props)[it.key()], at + "/" + it.key());
        if (!r.empty()) return r;
      } else if (extra != s.end()) {
        if (extra->is_boolean() && !extra->get<bool>()) return where + ": unknown property \"" + it.key() + "\"";
        std::string r = check(it.value(), *extra, at + "/" + it.key());
        if (!r.empty()) return r;
      }
    }
  }
  return "";
}

}  // namespace

std::string validate_json(const json& value, const json& schema) { return check(value, schema, ""); }

}  // namespace causeway::mcp
