// What the fleet store's answers must look like before anything is believed (docs/SECURITY.md
// "A hostile fleet store"). A SELECT is asked for as TabSeparatedWithNamesAndTypes: the first
// line names the columns, the second gives their ClickHouse types, then the rows. The answer is
// checked against what the caller asked: that many columns, each of the kind expected, every
// row that many fields, every number a number. Anything else is an error, never "0 rows":
// `ship`'s watermarks rest on these answers (a garbage answer read as "nothing shipped yet"
// would send a session twice, or skip it).
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace causeway::fleet {

// What a column's values are, as the caller reads them.
enum class ColumnKind {
  Int,    // (U)Int8..64, Nullable of one: digits, or \N when nullable
  Float,  // Float32/64 or Decimal (an integer type is accepted too): a number, inf, nan, \N
  Text,   // String, FixedString, Enum, LowCardinality(String), Date, UUID…: any bytes
  Array,  // Array(…): [ … ]
};

using StoreRows = std::vector<std::vector<std::string>>;

// The rows of a TabSeparatedWithNamesAndTypes answer (fields unescaped, "\N" kept), or
// "fleet_bad_answer" saying what was wrong. `asked` names the query for the message.
Result<StoreRows> parse_typed_answer(std::string_view body, const std::vector<ColumnKind>& kinds, std::string_view asked);

// The kind a ClickHouse type name reads as (Nullable/LowCardinality looked through); false
// for a name that is no type (a hostile answer's header).
bool column_kind_of(std::string_view ch_type, ColumnKind& kind, bool& nullable);

}  // namespace causeway::fleet
