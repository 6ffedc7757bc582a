// ClickHouse's Native format: the rows of one INSERT as columns, the layout the server keeps
// in memory, so it stores them without parsing text (docs/FLEET.md "Shipping speed"). Column
// types are the store's closed set: Int64, UInt64, Float64, String, each maybe Nullable.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "fleet/tables.h"

namespace causeway::fleet {

enum class NativeType { Int64, UInt64, Float64, String };

class NativeBlock {
 public:
  // Fails for a type outside the closed set (a table spec this encoder cannot write).
  static Result<NativeBlock> for_columns(const std::vector<Column>& columns);

  size_t columns() const { return cols_.size(); }
  size_t rows() const { return rows_; }
  bool nullable(size_t col) const { return cols_[col].nullable; }
  NativeType type(size_t col) const { return cols_[col].type; }

  // One value per column, in column order; end_row() after the last one of a row.
  void add_int(size_t col, int64_t v);
  void add_float(size_t col, double v);
  void add_string(size_t col, std::string_view v);
  void add_null(size_t col);  // NULL where nullable, else the type's zero / empty string
  void end_row() { ++rows_; }

  // The block as the body of `INSERT INTO t FORMAT Native`: pieces to send one after the
  // other, pointing into the block (valid until the next add or clear; no copy is made).
  std::vector<std::string_view> wire();
  // Orders the rows by the given columns (non-nullable Int64 ones, compared in turn) unless
  // they already are: ClickHouse then finds the block in its sort key's order and writes it
  // without sorting it and permuting every column itself (docs/FLEET.md "Shipping speed").
  void sort_by(const std::vector<size_t>& key_cols);
  void clear();

 private:
  struct Col {
    std::string head;  // the column's name and type, encoded
    NativeType type;
    bool nullable;
    std::string nulls, data;  // null map (one byte a row) and values
  };
  std::vector<Col> cols_;
  size_t rows_ = 0;
  std::string head_;     // column and row counts
  std::string scratch_;  // a column's values or null map, permuted, then copied back

  std::vector<uint32_t> perm_;
  std::vector<size_t> offsets_;  // where each row's string starts in a String column
};

}  // namespace causeway::fleet
