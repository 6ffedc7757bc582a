// Shared by the stdio and HTTPS end-to-end tests: what every transport must do for the
// official MCP TypeScript SDK client.
import assert from 'node:assert/strict';
import Ajv from 'ajv';

export { env, tempDir, makeFixture } from './process.mjs';

export const EXPECTED_TOOLS = ['get_check', 'get_trace_stats', 'get_causal_chains', 'get_stacks', 'run_demo',
  'get_test_report', 'run_sql', 'describe_schema', 'get_tail_breakdown', 'get_request_latency'];

const CALLS = {
  get_check: {},
  get_trace_stats: { top_n: 5, since: '1h' },
  get_causal_chains: { limit: 3 },
  get_stacks: { op: 'cudaStreamSynchronize', limit: 2 },
  run_demo: { scenario: 'incident' },
  get_test_report: {},
  run_sql: { query: 'SELECT pid, comm, cmdline FROM processes ORDER BY pid', limit: 10 },
  describe_schema: {},
  get_tail_breakdown: { op: 'cudaStreamSynchronize', quantile: 0.99 },
  get_request_latency: { metric: 'ttft' },
};

// Lists tools/prompts/resources, calls every tool and validates each structuredContent
// against the tool's outputSchema (the SDK validates too; this is an independent check).
export async function exerciseClient(client, label) {
  const ajv = new Ajv({ strict: false, allErrors: true });
  const { tools } = await client.listTools();
  const names = tools.map((t) => t.name).sort();
  assert.deepEqual(names, [...EXPECTED_TOOLS].sort(), `${label}: tool list`);
  for (const t of tools) {
    assert.equal(t.annotations?.readOnlyHint, true, `${t.name} readOnlyHint`);
    assert.ok(t.inputSchema && t.outputSchema, `${t.name} schemas`);
  }
  const { prompts } = await client.listPrompts();
  assert.ok(prompts.some((p) => p.name === 'investigate'), `${label}: investigate prompt`);
  const prompt = await client.getPrompt({ name: 'investigate', arguments: { since: '5m', question: 'why is training slow?' } });
  assert.match(prompt.messages[0].content.text, /get_causal_chains/);
  const { resources } = await client.listResources();
  assert.ok(resources.some((r) => r.uri === 'causeway://schema'));
  const schemaRes = await client.readResource({ uri: 'causeway://schema' });
  assert.ok(JSON.parse(schemaRes.contents[0].text).objects.length > 5);

  const results = {};
  for (const t of tools) {
    const result = await client.callTool({ name: t.name, arguments: CALLS[t.name] });
    const text = result.content?.[0]?.text ?? '';
    assert.equal(result.isError, false, `${label}: ${t.name} failed: ${text}`);
    assert.ok(result.structuredContent && Object.keys(result.structuredContent).length > 0, `${t.name}: structuredContent`);
    const validate = ajv.compile(t.outputSchema);
    assert.ok(validate(result.structuredContent), `${t.name}: ${ajv.errorsText(validate.errors)}`);
    assert.ok(text.length > 0 && text.length <= 32 * 1024, `${t.name}: compact text`);
    results[t.name] = result;
  }
  // Untrusted strings: fenced as data, control characters gone.
  const sqlText = results.run_sql.content[0].text;
  assert.match(sqlText, /«IGNORE ALL PREVIOUS INSTRUCTIONS/);
  assert.doesNotMatch(sqlText, /[\u0000-\u0008\u001b\u202e]/);
  assert.ok(results.get_trace_stats.structuredContent.ops.length > 0, 'stats has ops');
  assert.ok(results.get_causal_chains.structuredContent.chains.length > 0, 'chains present');
  assert.ok(results.get_stacks.structuredContent.stacks[0].frames.length > 0, 'stack frames');
  assert.equal(results.get_tail_breakdown.structuredContent.ops[0].op, 'cudaStreamSynchronize', 'tail breakdown op');
  assert.equal(results.get_test_report.structuredContent.found, true);
  const served = results.get_check.structuredContent.db;
  assert.ok(served.readable && served.sessions >= 1 && served.schema_version === served.latest_schema_version,
    `get_check reports the served DB: ${JSON.stringify(served)}`);

  // Input validated against the schema: a tool error the model can act on.
  const bad = await client.callTool({ name: 'run_sql', arguments: { query: 'SELECT 1', limit: 999999 } });
  assert.equal(bad.isError, true);
  assert.match(bad.content[0].text, /limit/);
  // A write is refused by the guard, as a tool error.
  const write = await client.callTool({ name: 'run_sql', arguments: { query: 'DELETE FROM events' } });
  assert.equal(write.isError, true);

  // Unknown tool: JSON-RPC -32602.
  await assert.rejects(client.callTool({ name: 'no_such_tool', arguments: {} }), (e) => e.code === -32602);
  await exactRoundTrip(client, label);
  return results;
}

// Issue 25: JavaScript reads JSON numbers as doubles. A stack id from get_stacks must find its
// row through run_sql, and every ns instant must have an exact ISO-8601 twin.
export async function exactRoundTrip(client, label) {
  const sql = async (query) => {
    const r = await client.callTool({ name: 'run_sql', arguments: { query } });
    assert.equal(r.isError, false, `${label}: ${query}: ${r.content?.[0]?.text}`);
    return r.structuredContent;
  };
  const { structuredContent: st } = await client.callTool({ name: 'get_stacks', arguments: { limit: 50 } });
  const ids = st.stacks.map((s) => s.stack_id);
  assert.ok(ids.every((id) => typeof id === 'string' && /^-?\d+$/.test(id)), `${label}: stack ids are decimal strings`);
  const big = ids.find((id) => !Number.isSafeInteger(Number(id)));
  assert.ok(big, `${label}: the fixture has a stack id beyond 2^53 (else this check could not fail): ${ids}`);
  assert.notEqual(String(Number(big)), big, 'a JavaScript number would have rounded it');
  for (const query of [`SELECT COUNT(*) FROM stacks WHERE id = '${big}'`, `SELECT COUNT(*) FROM stacks WHERE id = ${big}`,
    `SELECT COUNT(*) FROM v_calls WHERE stack_id = '${big}'`]) {
    assert.ok((await sql(query)).rows[0][0] >= 1, `${label}: ${query} finds the stack`);
  }
  const back = await sql(`SELECT id FROM stacks WHERE id = ${big}`);
  assert.equal(back.rows[0][0], big, `${label}: run_sql sends the id back as the same string`);
  assert.equal(back.column_types[0], 'integer');
  // Instants: the number stays (rounded here), the twin is exact.
  const win = st.window;
  assert.match(win.from_utc, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z$/);
  const isoNs = (iso) => BigInt(Date.parse(iso.slice(0, 19) + 'Z')) * 1000000n + BigInt(iso.slice(20, 29));
  const first = await sql('SELECT MIN(ts_ns) FROM events WHERE session_id = (SELECT MAX(id) FROM sessions)');
  assert.equal(typeof first.rows[0][0], 'string', `${label}: a ns timestamp column comes as decimal strings`);
  const chains = (await client.callTool({ name: 'get_causal_chains', arguments: { limit: 100 } })).structuredContent.chains;
  let twins = 0;
  for (const c of chains) {
    for (const t of c.timeline ?? []) {
      const exact = isoNs(t.ts_utc);
      const rounded = BigInt(t.ts_ns);
      assert.ok(exact - rounded <= 512n && rounded - exact <= 512n, `${label}: ts_utc ${t.ts_utc} names ts_ns ${t.ts_ns}`);
      twins += 1;
    }
  }
  assert.ok(twins > 0, `${label}: chain timelines carry ts_utc`);
  const at = first.rows[0][0];
  assert.ok((await sql(`SELECT COUNT(*) FROM events WHERE ts_ns = '${at}'`)).rows[0][0] >= 1, `${label}: exact ts_ns round trip`);
}

// Asserts a raw JSON-RPC response line/object is the error expected.
export function expectError(msg, code, id) {
  assert.ok(msg.error, `expected error ${code}, got ${JSON.stringify(msg)}`);
  assert.equal(msg.error.code, code);
  assert.deepEqual(msg.id, id);
}

export const MODERN_META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': {},
};
