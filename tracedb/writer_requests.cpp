// The writer's request tables: requests (one row per HTTP request, requests/), engines and
// engine_metrics (the serving engine's own metrics), each with its columns listed once and bound
// by name (tracedb/table_columns.h).
#include "tracedb/store_writer.h"
#include "tracedb/store_writer_internal.h"
#include "tracedb/table_columns.h"

namespace causeway {
namespace writer_requests {

enum class RequestCol {
  session_id, request_id, id_generated, server_pid, fd, method, path, tenant, peer, start_ns, end_ns, first_byte_ns,
  first_token_ns, last_byte_ns, ttft_ns, e2e_ns, itl_max_ns, itl_us, status, prompt_bytes, response_bytes, streamed,
  events, complete, tls, model, max_tokens, input_tokens, output_tokens, tpot_ns, content_events, end_reason, read_end_ns,
  api_wait_ns, count_
};
inline constexpr TableColumns<RequestCol> kRequestColumns{
    "requests",
    {"session_id", "request_id", "id_generated", "server_pid", "fd", "method", "path", "tenant", "peer", "start_ns",
     "end_ns", "first_byte_ns", "first_token_ns", "last_byte_ns", "ttft_ns", "e2e_ns", "itl_max_ns", "itl_us", "status",
     "prompt_bytes", "response_bytes", "streamed", "events", "complete", "tls", "model", "max_tokens", "input_tokens",
     "output_tokens", "tpot_ns", "content_events", "end_reason", "read_end_ns", "api_wait_ns"}};

enum class EngineCol { session_id, pid, engine, url, count_ };
inline constexpr TableColumns<EngineCol> kEngineColumns{"engines", {"session_id", "pid", "engine", "url"}};
// The engine may be named only once its metrics were read: the latest name wins.
constexpr const char* kEngineOnConflict =
    " ON CONFLICT (session_id, pid) DO UPDATE SET engine = excluded.engine, url = excluded.url "
    "WHERE engine != excluded.engine OR url != excluded.url";

enum class EngineMetricCol { session_id, ts_ns, pid, engine, name, labels, value, count_ };
inline constexpr TableColumns<EngineMetricCol> kEngineMetricColumns{
    "engine_metrics", {"session_id", "ts_ns", "pid", "engine", "name", "labels", "value"}};

}  // namespace writer_requests

// Function-local using-directives only: the CI's unity build puts this file beside others.
Result<void> StoreWriter::prepare_request_statements(sqlite3* h) {
  using namespace writer_requests;
  using namespace store_writer_detail;
  if (auto r = prepare_into(h, ins_request_, kRequestColumns.insert_sql()); !r) return r;
  if (auto r = prepare_into(h, ins_engine_sample_, kEngineMetricColumns.insert_sql()); !r) return r;
  return prepare_into(h, upsert_engine_, kEngineColumns.insert_sql() + kEngineOnConflict);
}

int StoreWriter::write_meta_row(const RequestRecord& q) {
  using namespace writer_requests;
  using namespace store_writer_detail;
  using C = RequestCol;
  RowBind<C>(ins_request_)
      .set(C::session_id, session_id_)
      .set(C::request_id, q.request_id)
      .set(C::id_generated, int64_t{q.id_generated})
      .set(C::server_pid, int64_t{q.server_pid})
      .set(C::fd, int64_t{q.fd})
      .set(C::method, q.method)
      .set(C::path, q.path)
      .set(C::tenant, q.tenant)
      .set(C::peer, q.peer)
      .set(C::start_ns, q.start_ns)
      .set(C::end_ns, q.end_ns)
      .set_nonzero(C::first_byte_ns, q.first_byte_ns)  // 0 (not seen) is stored as NULL
      .set_nonzero(C::first_token_ns, q.first_token_ns)
      .set_nonzero(C::last_byte_ns, q.last_byte_ns)
      .set_opt(C::ttft_ns, q.ttft_ns)
      .set_opt(C::e2e_ns, q.e2e_ns)
      .set_opt(C::itl_max_ns, q.itl_max_ns)
      .set_nonempty(C::itl_us, q.itl_us)
      .set(C::status, int64_t{q.status})
      .set(C::prompt_bytes, static_cast<int64_t>(q.prompt_bytes))
      .set(C::response_bytes, static_cast<int64_t>(q.response_bytes))
      .set(C::streamed, int64_t{q.streamed})
      .set(C::events, int64_t{q.events})
      .set(C::complete, int64_t{q.complete})
      .set(C::tls, int64_t{q.tls})
      .set_nonempty(C::model, q.model)
      .set_opt(C::max_tokens, q.max_tokens)
      .set_opt(C::input_tokens, q.input_tokens)
      .set_opt(C::output_tokens, q.output_tokens)
      .set_opt(C::tpot_ns, q.tpot_ns)
      .set(C::content_events, int64_t{q.content_events})
      .set(C::end_reason, q.end_reason)
      .set_nonzero(C::read_end_ns, q.read_end_ns)  // arrival (docs/INFERENCE.md "Arrival time")
      .set_opt(C::api_wait_ns, q.api_wait_ns);
  return finish_meta(ins_request_);
}

int StoreWriter::write_meta_row(const EngineSampleRecord& es) {
  using namespace writer_requests;
  using namespace store_writer_detail;
  RowBind<EngineCol>(upsert_engine_)
      .set(EngineCol::session_id, session_id_)
      .set(EngineCol::pid, int64_t{es.pid})
      .set(EngineCol::engine, es.engine)
      .set(EngineCol::url, es.url);
  if (int rc = finish_meta(upsert_engine_); rc != SQLITE_DONE) return rc;
  using M = EngineMetricCol;
  for (const EngineSampleRecord::Sample& x : es.samples) {
    RowBind<M>(ins_engine_sample_)
        .set(M::session_id, session_id_)
        .set(M::ts_ns, es.ts_ns)
        .set(M::pid, int64_t{es.pid})
        .set(M::engine, es.engine)
        .set(M::name, x.name)
        .set(M::labels, x.labels)
        .set(M::value, x.value);
    if (int rc = finish_meta(ins_engine_sample_); rc != SQLITE_DONE) return rc;
  }
  return SQLITE_DONE;
}

}  // namespace causeway
