// `causeway mcp --fleet` over stdio with the official MCP TypeScript SDK client, against the
// private ClickHouse that tests/e2e/test_fleet_clickhouse.cpp started and shipped two hosts
// into (node-a: ranks 0-1, node-b: the late rank 2, pid 6003). Run by that test, which passes
// the store in the environment: FLEET_URL, FLEET_DATABASE, FLEET_READER_PW, FLEET_EVENTS.
import assert from 'node:assert/strict';
import path from 'node:path';
import Ajv from 'ajv';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { env, tempDir, EXPECTED_TOOLS } from './lib/common.mjs';

const bin = env('CAUSEWAY_BIN');
const dir = tempDir();
const ajv = new Ajv({ strict: false });

async function connect(args) {
  const transport = new StdioClientTransport({ command: bin, args, stderr: 'pipe' });
  const client = new Client({ name: 'causeway-e2e-fleet', version: '1.0.0' });
  await client.connect(transport);
  return client;
}

const local = await connect(['mcp', '--db', path.join(dir, 'none.db'), '--demo-dir', path.join(dir, 'demo')]);
// The shared test server's reader may read every test's database (scripts/clickhouse_private.sh
// "any"), which mcp --fleet refuses unless told: tests/e2e/test_fleet_reader_reach.cpp checks
// the example's narrow reader and the refusal.
const fleet = await connect(['mcp', '--fleet', env('FLEET_URL'), '--database', env('FLEET_DATABASE'),
  '--user', 'causeway_reader', '--password-file', env('FLEET_READER_PW'), '--allow-broad-reader']);

// 1. The same tools, with the same schemas, as the local server.
const localTools = (await local.listTools()).tools;
const fleetTools = (await fleet.listTools()).tools;
assert.deepEqual(fleetTools.map((t) => t.name).sort(), [...EXPECTED_TOOLS].sort());
assert.deepEqual(fleetTools, localTools, 'mcp --fleet lists exactly the local tools and schemas');
await local.close();
console.log('ok - tools/list under --fleet equals the local list');

const schemaOf = Object.fromEntries(fleetTools.map((t) => [t.name, t.outputSchema]));
async function call(name, args) {
  const r = await fleet.callTool({ name, arguments: args });
  const text = r.content?.[0]?.text ?? '';
  assert.equal(r.isError, false, `${name} failed: ${text}`);
  const validate = ajv.compile(schemaOf[name]);
  assert.ok(validate(r.structuredContent), `${name}: ${ajv.errorsText(validate.errors)}`);
  return { s: r.structuredContent, text };
}
async function refused(name, args) {
  const r = await fleet.callTool({ name, arguments: args });
  assert.equal(r.isError, true, `${name} ${JSON.stringify(args)} should be a tool error`);
  return r.content[0].text;
}

// 2. The chains tool: the cross-host straggler, its late rank and that rank's host.
{
  const { s, text } = await call('get_causal_chains', {});
  const straggler = s.chains.find((c) => c.cause === 'nccl_straggler');
  assert.ok(straggler, `no nccl_straggler chain: ${JSON.stringify(s)}`);
  assert.equal(straggler.culprit.host, 'node-b');
  assert.equal(straggler.culprit.rank, 2);
  assert.equal(straggler.culprit.pid, 6003);
  assert.equal(straggler.severity, 'HIGH');
  assert.match(text, /host [^\n]*node-b/);
  console.log('ok - get_causal_chains names rank 2 (pid 6003) on node-b');
}

// 3. Stats and request latency from the fleet readers, per host.
{
  const { s } = await call('get_trace_stats', { top_n: 200 });
  const hosts = new Set(s.ops.map((o) => o.host));
  assert.deepEqual([...hosts].sort(), ['node-a', 'node-b']);
  const calls = s.ops.reduce((n, o) => n + o.count, 0);
  assert.ok(calls > 0 && calls <= Number(env('FLEET_EVENTS')), `calls ${calls}`);
  const { s: req } = await call('get_request_latency', {});
  assert.equal(req.requests.count, 80);
  console.log('ok - get_trace_stats has both hosts; get_request_latency counts 80 requests');
}

// 4. run_sql speaks ClickHouse SQL, tables unqualified in the store's database.
{
  const { s, text } = await call('run_sql', { query: 'SELECT host, count() AS n FROM events GROUP BY host ORDER BY host;' });
  assert.deepEqual(s.columns, ['host', 'n']);
  assert.deepEqual(s.column_types, ['text', 'integer']);
  assert.equal(s.rows.length, 2);
  assert.deepEqual(s.rows.map((r) => r[0]), ['node-a', 'node-b']);
  assert.equal(s.rows[0][1] + s.rows[1][1], Number(env('FLEET_EVENTS')));
  assert.match(text, /node-a/);
  // Paging: a cursor hands out the rest.
  const p1 = await call('run_sql', { query: 'SELECT number FROM system.numbers LIMIT 5', limit: 3 });
  assert.equal(p1.s.truncated, true);
  assert.deepEqual(p1.s.rows, [[0], [1], [2]]);
  const p2 = await call('run_sql', { query: 'SELECT number FROM system.numbers LIMIT 5', limit: 3, cursor: p1.s.next_cursor });
  assert.deepEqual(p2.s.rows, [[3], [4]]);
  assert.equal(p2.s.truncated, false);
  console.log('ok - run_sql: a SELECT returns rows; a cursor pages');
}

// 5. Writes and settings: refused by the lexical guard (sql_rejected) before the server sees
// them; what passes the guard and is still not allowed is refused by the server (readonly=1).
{
  for (const q of ['INSERT INTO events (host) VALUES (\'x\')', 'ALTER TABLE events DELETE WHERE 1',
    'SET max_execution_time = 1000', 'SELECT 1; DROP TABLE events', 'SELECT 1 SETTINGS max_result_rows = 0',
    'SELECT 1 FORMAT TSV']) {
    const text = await refused('run_sql', { query: q });
    assert.match(text, /sql_rejected/, `${q}: ${text}`);
  }
  const server = await refused('run_sql', { query: "SELECT * FROM url('http://127.0.0.1:1/', CSV, 'a String')" });
  assert.match(server, /sql_error/);
  assert.match(server, /readonly|forbidden/i, server);
  console.log('ok - run_sql: INSERT/ALTER/SET/SETTINGS/FORMAT refused by the guard; a table function by the server (readonly=1): ' + server.slice(0, 300));
}

// 6. Tools that read one host's DB: a clear tool error, never local data.
{
  for (const name of ['get_stacks', 'get_check', 'describe_schema', 'get_tail_breakdown', 'get_test_report', 'run_demo']) {
    const text = await refused(name, {});
    assert.match(text, /needs_host_db/, `${name}: ${text}`);
    assert.match(text, /fleet store/, text);
  }
  await assert.rejects(fleet.readResource({ uri: 'causeway://sessions' }), /fleet store/);
  console.log('ok - tools without a fleet reader answer needs_host_db');
}
await fleet.close();
