#include "sqlguard/validator.h"

#include <array>
#include <vector>

#include "sqlguard/lexer.h"
#include "sqlguard/policy.h"

namespace causeway::sqlguard {
namespace {

// Functions refused with a specific reason, so the message tells the caller why.
bool is_known_dangerous_function(const std::string& lower) {
  static constexpr std::array kNames = {"edit", "fts3_tokenizer", "load_extension", "randomblob", "readfile",
                                        "sqlar_compress", "sqlar_uncompress", "writefile", "zeroblob", "zipfile"};
  for (const char* n : kNames)
    if (lower == n) return true;
  return false;
}

// Keywords that SQLite also parses as a function call when followed by "(".
bool is_callable_keyword(const std::string& lower) {
  return lower == "like" || lower == "glob" || lower == "replace" || lower == "match" || lower == "regexp" ||
         lower == "raise";
}

class Checker {
 public:
  Checker(std::string_view sql, std::vector<Token> tokens) : sql_(sql) {
    for (const Token& t : tokens)
      if (t.significant()) sig_.push_back(t);
    match_.assign(sig_.size(), npos);
    std::vector<size_t> open;
    for (size_t i = 0; i < sig_.size(); ++i) {
      if (sig_[i].is_op("(")) {
        open.push_back(i);
      } else if (sig_[i].is_op(")") && !open.empty()) {
        match_[open.back()] = i;
        match_[i] = open.back();
        open.pop_back();
      }
    }
  }

  std::optional<Rejection> run() {
    if (sig_.empty()) return reject_at_end("empty SQL: send one SELECT statement");
    size_t end = sig_.size();
    for (size_t i = 0; i < sig_.size(); ++i) {
      if (!sig_[i].is_op(";")) continue;
      for (size_t j = i + 1; j < sig_.size(); ++j)
        if (!sig_[j].is_op(";"))
          return reject(j, "more than one statement: `" + excerpt(j) + "` at byte " + std::to_string(sig_[j].offset) +
                               " follows the `;` at byte " + std::to_string(sig_[i].offset) +
                               "; send one statement per query");
      end = i;
      break;
    }
    if (end == 0) return reject(0, "empty statement before `;`: send one SELECT statement");
    end_ = end;
    if (auto r = check_statement_kind()) return r;
    mark_cte_names();
    return check_tokens();
  }

 private:
  static constexpr size_t npos = static_cast<size_t>(-1);

  std::string excerpt(size_t i) const { return token_excerpt(sig_[i].text); }

  Rejection reject(size_t i, std::string message) const {
    return Rejection{sig_[i].offset, excerpt(i), std::move(message)};
  }
  Rejection reject_at_end(std::string message) const { return Rejection{sql_.size(), "", std::move(message)}; }

  std::string where(size_t i) const { return "`" + excerpt(i) + "` at byte " + std::to_string(sig_[i].offset); }

  std::optional<Rejection> check_statement_kind() {
    size_t k = 0;
    if (sig_[k].is_keyword("EXPLAIN")) {
      ++k;
      if (k < end_ && sig_[k].is_keyword("QUERY")) {
        ++k;
        if (k >= end_ || !sig_[k].is_keyword("PLAN"))
          return k < end_ ? reject(k, "expected PLAN after EXPLAIN QUERY, found " + where(k))
                          : reject_at_end("EXPLAIN QUERY needs PLAN and a SELECT");
        ++k;
      }
      if (k >= end_) return reject_at_end("EXPLAIN needs a SELECT statement to explain");
    }
    const Token& first = sig_[k];
    if (first.is_keyword("SELECT") || first.is_keyword("VALUES")) return std::nullopt;
    if (first.is_keyword("WITH")) {
      // The main statement is the first statement keyword outside the CTE bodies' parentheses.
      int depth = 0;
      for (size_t i = k + 1; i < end_; ++i) {
        if (sig_[i].is_op("(")) ++depth;
        else if (sig_[i].is_op(")")) --depth;
        else if (depth == 0 && sig_[i].kind == TokenKind::word) {
          if (sig_[i].is_keyword("SELECT") || sig_[i].is_keyword("VALUES")) return std::nullopt;
          if (sig_[i].is_keyword("INSERT") || sig_[i].is_keyword("UPDATE") || sig_[i].is_keyword("DELETE") ||
              sig_[i].is_keyword("REPLACE"))
            return reject(i, "WITH ... " + where(i) + ": only WITH ... SELECT is allowed; this query is read-only");
        }
      }
      return reject(k, "WITH at byte " + std::to_string(first.offset) + " is not followed by a SELECT");
    }
    std::string what = first.kind == TokenKind::word ? "statement " : "";
    return reject(k, what + where(k) +
                         " is not allowed: only SELECT, WITH ... SELECT, VALUES and EXPLAIN [QUERY PLAN] of those "
                         "run here (the trace DB is read-only)");
  }

  // Names declared by WITH clauses ("WITH slow(pid, n) AS (...)") are followed by "(" but are
  // not function calls.
  void mark_cte_names() {
    cte_name_.assign(sig_.size(), false);
    for (size_t w = 0; w < end_; ++w) {
      if (!sig_[w].is_keyword("WITH")) continue;
      size_t j = w + 1;
      if (j < end_ && sig_[j].is_keyword("RECURSIVE")) ++j;
      while (j < end_ && (sig_[j].kind == TokenKind::word || sig_[j].kind == TokenKind::quoted_id)) {
        cte_name_[j] = true;
        ++j;
        if (j < end_ && sig_[j].is_op("(")) {
          if (match_[j] == npos) return;
          j = match_[j] + 1;
        }
        if (j >= end_ || !sig_[j].is_keyword("AS")) break;
        ++j;
        if (j < end_ && sig_[j].is_keyword("NOT")) ++j;
        if (j < end_ && sig_[j].is_keyword("MATERIALIZED")) ++j;
        if (j >= end_ || !sig_[j].is_op("(") || match_[j] == npos) break;
        j = match_[j] + 1;
        if (j < end_ && sig_[j].is_op(",")) ++j;
        else break;
      }
    }
  }

  std::optional<Rejection> check_function(size_t i, const std::string& name) const {
    std::string lower = ascii_lower(name);
    if (is_allowed_function(lower) || is_allowed_table_function(lower)) return std::nullopt;
    if (is_known_dangerous_function(lower))
      return reject(i, "function " + where(i) + " is not allowed: it reaches files, extensions or allocates "
                                                 "unbounded memory");
    if (is_denied_object(lower))
      return reject(i, where(i) + " is not allowed: it exposes database pages, files, statements or pragmas");
    return reject(i, "function " + where(i) +
                         " is not on sqlguard's allow-list (core scalar, aggregate, window, date, math and JSON "
                         "functions are available)");
  }

  std::optional<Rejection> check_tokens() {
    struct Frame {
      bool cast = false;       // the parentheses of CAST( ... )
      bool type_name = false;  // past CAST's AS: words here name a type, "VARCHAR(10)" is no call
    };
    std::vector<Frame> frames;
    for (size_t i = 0; i < end_; ++i) {
      const Token& t = sig_[i];
      const bool next_is_paren = i + 1 < end_ && sig_[i + 1].is_op("(");
      switch (t.kind) {
        case TokenKind::variable:
          return reject(i, "parameter " + where(i) + " is not supported: write the value into the SQL");
        case TokenKind::op:
          if (t.is_op("(")) frames.push_back(Frame{i > 0 && sig_[i - 1].is_keyword("CAST"), false});
          else if (t.is_op(")") && !frames.empty()) frames.pop_back();
          break;
        case TokenKind::word: {
          std::string lower = ascii_lower(t.text);
          if (lower == "as" && !frames.empty() && frames.back().cast) frames.back().type_name = true;
          if (is_write_keyword(lower) || (lower == "replace" && !next_is_paren))
            return reject(i, "keyword " + where(i) +
                                 " is not allowed: this query is read-only (writes, ATTACH, PRAGMA, VACUUM and "
                                 "transactions are refused); if it is a column name, quote it as \"" +
                                 std::string(t.text) + "\"");
          if (next_is_paren) {
            if (cte_name_[i] || (!frames.empty() && frames.back().type_name)) break;
            if (is_sqlite_keyword(lower) && !is_callable_keyword(lower)) break;
            if (auto r = check_function(i, lower)) return r;
          } else if (is_denied_object(lower)) {
            return reject(i, where(i) + " is not allowed: it exposes database pages, files, statements or pragmas");
          }
          break;
        }
        case TokenKind::quoted_id: {
          // SQLite accepts a quoted name as a function or table name: "load_extension"('x').
          std::string name = identifier_name(t);
          if (next_is_paren) {
            if (cte_name_[i]) break;
            if (auto r = check_function(i, name)) return r;
          } else if (is_denied_object(name)) {
            return reject(i, where(i) + " is not allowed: it exposes database pages, files, statements or pragmas");
          }
          break;
        }
        default:
          break;
      }
    }
    return std::nullopt;
  }

  std::string_view sql_;
  std::vector<Token> sig_;
  std::vector<size_t> match_;
  std::vector<bool> cte_name_;
  size_t end_ = 0;
};

}  // namespace

std::optional<Rejection> find_rejection(std::string_view sql) {
  if (sql.size() > kMaxSqlBytes)
    return Rejection{kMaxSqlBytes, "",
                     "SQL is " + std::to_string(sql.size()) + " bytes; the limit is " + std::to_string(kMaxSqlBytes) +
                         " bytes"};
  LexResult lexed = tokenize(sql);
  if (lexed.error) {
    size_t at = lexed.error->offset;
    std::string tok = token_excerpt(sql.substr(at, 16));
    return Rejection{at, tok, lexed.error->message + " at byte " + std::to_string(at) + " (`" + tok + "`)"};
  }
  return Checker(sql, std::move(lexed.tokens)).run();
}

Result<void> validate_sql(std::string_view sql) {
  if (auto r = find_rejection(sql)) return make_error("sql_rejected", r->message);
  return {};
}

}  // namespace causeway::sqlguard
