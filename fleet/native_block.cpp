#include "fleet/native_block.h"

#include <algorithm>
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

void NativeBlock::sort_by(const std::vector<size_t>& key_cols) {
  auto at = [this](size_t col, size_t row) {
    int64_t v;
    std::memcpy(&v, cols_[col].data.data() + row * sizeof v, sizeof v);
    return v;
  };
  auto less = [&](uint32_t a, uint32_t b) {
    for (size_t k : key_cols)
      if (int64_t x = at(k, a), y = at(k, b); x != y) return x < y;
    return false;
  };
  bool sorted = true;
  for (size_t r = 1; r < rows_ && sorted; ++r) sorted = !less(static_cast<uint32_t>(r), static_cast<uint32_t>(r - 1));
  if (sorted) return;
  perm_.resize(rows_);
  for (size_t r = 0; r < rows_; ++r) perm_[r] = static_cast<uint32_t>(r);
  std::stable_sort(perm_.begin(), perm_.end(), less);
  for (Col& c : cols_) {
    if (c.nullable) {
      scratch_.resize(rows_);
      for (size_t r = 0; r < rows_; ++r) scratch_[r] = c.nulls[perm_[r]];
      std::memcpy(c.nulls.data(), scratch_.data(), rows_);
    }
    scratch_.clear();
    if (c.type != NativeType::String) {  // every other type here is 8 bytes a value
      scratch_.resize(rows_ * 8);
      for (size_t r = 0; r < rows_; ++r) std::memcpy(scratch_.data() + r * 8, c.data.data() + size_t{perm_[r]} * 8, 8);
    } else {  // varint length + bytes per row: find where each starts, then copy in order
      offsets_.resize(rows_ + 1);
      size_t pos = 0;
      for (size_t r = 0; r < rows_; ++r) {
        offsets_[r] = pos;
        uint64_t len = 0;
        for (int shift = 0;; shift += 7) {
          const auto byte = static_cast<unsigned char>(c.data[pos++]);
          len |= uint64_t{byte & 0x7fu} << shift;
          if (byte < 0x80) break;
        }
        pos += len;
      }
      offsets_[rows_] = pos;
      for (size_t r = 0; r < rows_; ++r)
        scratch_.append(c.data, offsets_[perm_[r]], offsets_[perm_[r] + 1] - offsets_[perm_[r]]);
    }
    // Copied back rather than swapped: each column keeps its own buffer (swapping would pass
    // buffers of different sizes from column to column, and the heap would fragment).
    std::memcpy(c.data.data(), scratch_.data(), c.data.size());
  }
}

void NativeBlock::clear() {
  for (Col& c : cols_) c.nulls.clear(), c.data.clear();
  rows_ = 0;
}

}  // namespace causeway::fleet
