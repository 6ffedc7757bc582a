#include "fleet/native_block.h"

#include <charconv>
#include <cstring>

namespace causeway::fleet {

namespace {

void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out += static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  out += static_cast<char>(v);
}

void put_string(std::string& out, std::string_view s) {
  put_varint(out, s.size());
  out.append(s.data(), s.size());
}

template <class T>
void put_fixed(std::string& out, T v) {  // little-endian, as ClickHouse stores numbers
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));
  out.append(b, sizeof(T));
}

}  // namespace

Result<NativeBlock> NativeBlock::for_columns(const std::vector<Column>& columns) {
  NativeBlock b;
  for (const Column& c : columns) {
    std::string inner = c.type;
    const bool nullable = inner.rfind("Nullable(", 0) == 0;
    if (nullable) inner = inner.substr(9, inner.size() - 10);
    NativeType t;
    if (inner == "Int64") t = NativeType::Int64;
    else if (inner == "UInt64") t = NativeType::UInt64;
    else if (inner == "Float64") t = NativeType::Float64;
    else if (inner == "String") t = NativeType::String;
    else return make_error("internal", "column " + c.name + ": no Native encoding for type " + c.type);
    std::string head;
    put_string(head, c.name);
    put_string(head, c.type);
    b.cols_.push_back({std::move(head), t, nullable, {}, {}});
  }
  return b;
}

void NativeBlock::add_int(size_t col, int64_t v) {
  Col& c = cols_[col];
  if (c.nullable) c.nulls += '\0';
  switch (c.type) {
    case NativeType::Int64: put_fixed(c.data, v); break;
    case NativeType::UInt64: put_fixed(c.data, static_cast<uint64_t>(v)); break;
    case NativeType::Float64: put_fixed(c.data, static_cast<double>(v)); break;
    case NativeType::String: {
      char buf[24];
      auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
      put_string(c.data, std::string_view(buf, static_cast<size_t>(end - buf)));
      break;
    }
  }
}

void NativeBlock::add_float(size_t col, double v) {
  Col& c = cols_[col];
  if (c.type != NativeType::Float64) return add_int(col, static_cast<int64_t>(v));
  if (c.nullable) c.nulls += '\0';
  put_fixed(c.data, v);
}

void NativeBlock::add_string(size_t col, std::string_view v) {
  Col& c = cols_[col];
  if (c.type != NativeType::String) {  // text in a number column (SQLite allows it): its number
    int64_t n = 0;
    std::from_chars(v.data(), v.data() + v.size(), n);
    return add_int(col, n);
  }
  if (c.nullable) c.nulls += '\0';
  put_string(c.data, v);
}

void NativeBlock::add_null(size_t col) {
  Col& c = cols_[col];
  if (c.nullable) c.nulls += '\1';
  if (c.type == NativeType::String) put_varint(c.data, 0);
  else put_fixed(c.data, int64_t{0});  // all numeric types here are 8 bytes
}

std::vector<std::string_view> NativeBlock::wire() {
  head_.clear();
  put_varint(head_, cols_.size());
  put_varint(head_, rows_);
  std::vector<std::string_view> out{head_};
  for (const Col& c : cols_) {
    out.push_back(c.head);
    if (c.nullable) out.push_back(c.nulls);  // Nullable: the null map of every row, then the values
    out.push_back(c.data);
  }
  return out;
}

void NativeBlock::clear() {
  for (Col& c : cols_) c.nulls.clear(), c.data.clear();
  rows_ = 0;
}

}  // namespace causeway::fleet
