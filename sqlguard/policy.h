// The names sqlguard lets through, shared by the validator (text level) and the authorizer
// (SQLite level) so both layers enforce one list. An allow-list: a function that is not
// here is refused, so a function added by a future SQLite or an extension is refused too.
#pragma once

#include <string_view>

namespace causeway::sqlguard {

// Scalar, aggregate and window functions an analyst query may call (name is matched ASCII
// case-insensitively). Excludes everything that reaches files, extensions or connection
// state (load_extension, readfile, writefile, edit, fts3_tokenizer, zipfile, sqlar_*,
// changes, last_insert_rowid, sqlite_compileoption_*) and the blob allocators
// (randomblob, zeroblob) that only serve memory bombs. Includes the operator functions
// SQLite reports to the authorizer ("like", "glob", "->", "->>").
bool is_allowed_function(std::string_view name);

// Eponymous virtual tables that may appear in FROM: json_each and json_tree only.
bool is_allowed_table_function(std::string_view name);

// SQLite's own schema tables, readable so that an assistant can list tables.
bool is_readable_system_table(std::string_view name);

// Tables and table-valued functions that expose pages, files, statements or pragmas
// (sqlite_dbpage, dbstat, sqlite_stmt, fsdir, zipfile, pragma_*, any other sqlite_*).
bool is_denied_object(std::string_view name);

// Every SQLite 3.40 keyword (mkkeywordhash.c), for telling `IN (` from a function call.
bool is_sqlite_keyword(std::string_view name);

// Keywords that start or belong only to statements that change a database, a connection or
// a file: INSERT, UPDATE, DELETE, CREATE, DROP, ALTER, ATTACH, DETACH, PRAGMA, VACUUM,
// REINDEX, ANALYZE, BEGIN, COMMIT, ROLLBACK, SAVEPOINT, RELEASE, RETURNING, INTO,
// TRANSACTION, TRIGGER. (REPLACE is one too unless it calls the replace() function.)
bool is_write_keyword(std::string_view name);

}  // namespace causeway::sqlguard
