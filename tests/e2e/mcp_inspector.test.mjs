// Client matrix: the MCP Inspector CLI (npm @modelcontextprotocol/inspector, `inspector --cli`)
// drives every tool, the prompt and each resource over stdio and over HTTPS (bearer token, the
// test CA in NODE_EXTRA_CA_CERTS), and its results must equal what the CLI's `--json` says
// (stats --json = get_trace_stats, explain --json = get_causal_chains, explain --tail --json =
// get_tail_breakdown, query --json = run_sql, query --schema --json = the causeway://schema
// resource). `tools/list --strict` must report no schema portability finding, and every tool's
// largest answer must fit the 64 KiB reply budget (docs/MCP.md "Tools").
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { env, tempDir, makeFixture, EXPECTED_TOOLS } from './lib/common.mjs';
import { makeCert, makeToken, startServer, stopServer } from './lib/server.mjs';

const require = createRequire(import.meta.url);
const inspectorDir = path.dirname(require.resolve('@modelcontextprotocol/inspector/package.json'));
const launcher = path.join(inspectorDir, 'clients', 'launcher', 'build', 'index.js');
const bin = env('CAUSEWAY_BIN');
const dir = tempDir();
const db = makeFixture(dir);
const demoDir = path.join(dir, 'demo');
const REPLY_BUDGET = 64 * 1024;

// The inspector keeps its catalog and client config under HOME: a fresh one per run.
const home = path.join(dir, 'home');
fs.mkdirSync(home);
const baseEnv = { ...process.env, HOME: home, MCP_CATALOG_PATH: path.join(home, 'catalog.json') };

// Runs `inspector --cli` once (a fresh connection each time, as the CLI works); returns its
// --format json document ({"result": …, "schemaFindings": […]}) and stderr.
function inspector(target, args, extraEnv = {}) {
  const r = spawnSync(process.execPath, [launcher, '--cli', '--format', 'json', ...args, ...target],
    { encoding: 'utf8', env: { ...baseEnv, ...extraEnv }, timeout: 120000, maxBuffer: 16 << 20 });
  assert.equal(r.status, 0, `inspector ${args.join(' ')}: exit ${r.status}\n${r.stderr}\n${r.stdout.slice(0, 2000)}`);
  const doc = JSON.parse(r.stdout);
  return { json: doc.result, findings: doc.schemaFindings ?? [], stderr: r.stderr };
}

function cliJson(args) {
  const r = spawnSync(bin, [args[0], '--db', db, ...args.slice(1)], { encoding: 'utf8', maxBuffer: 16 << 20 });
  assert.equal(r.status, 0, `causeway ${args.join(' ')}: ${r.stderr}`);
  return JSON.parse(r.stdout);
}

const LARGEST = {
  get_check: {},
  get_trace_stats: { top_n: 200 },
  get_causal_chains: { limit: 100 },
  get_stacks: { limit: 50 },
  run_demo: { scenario: 'incident' },
  get_test_report: {},
  run_sql: { query: 'SELECT * FROM v_calls', limit: 1000 },
  describe_schema: {},
  get_tail_breakdown: { limit: 50, quantile: 0.5 },
  get_request_latency: { slowest: 1000 },
};

// What the CLI says, for the structured results to be compared with.
const stats = cliJson(['stats', '--json']);
const chains = cliJson(['explain', '--json', '--limit', '100']);
const tail = cliJson(['explain', '--tail', '--json', '--quantile', '0.5', '--limit', '50']);
const query = cliJson(['query', '--json', '--limit', '1000', '--', LARGEST.run_sql.query]);
const schema = cliJson(['query', '--schema', '--json']);

function matrix(label, target, extraEnv = {}) {
  const run = (args) => inspector(target, args, extraEnv);

  const listed = run(['--method', 'tools/list', '--strict']);
  assert.deepEqual(listed.json.tools.map((t) => t.name).sort(), [...EXPECTED_TOOLS].sort(), `${label}: tools`);
  assert.deepEqual(listed.findings, [], `${label}: --strict findings:\n${listed.stderr}`);
  assert.doesNotMatch(listed.stderr, /Warning: tool|Error: tool/, `${label}: --strict findings:\n${listed.stderr}`);

  const results = {};
  for (const name of EXPECTED_TOOLS) {
    const r = run(['--method', 'tools/call', '--tool-name', name, '--tool-args-json', JSON.stringify(LARGEST[name])]);
    const result = r.json;
    assert.notEqual(result.isError, true, `${label}: ${name}: ${JSON.stringify(result.content)}`);
    const size = Buffer.byteLength(JSON.stringify(result));
    assert.ok(size <= REPLY_BUDGET, `${label}: ${name} answered ${size} B, over the ${REPLY_BUDGET} B budget`);
    results[name] = result.structuredContent;
  }

  // Structured results = the CLI's --json.
  const s = results.get_trace_stats;
  assert.deepEqual(s.window, stats.window, `${label}: stats window`);
  assert.deepEqual(s.ops.map((o) => [o.source, o.op, o.pid, o.count, o.p99_us]),
    stats.ops.slice(0, s.ops.length).map((o) => [o.source, o.op, o.pid, o.count, o.p99_us]), `${label}: stats ops`);
  const c = results.get_causal_chains;
  assert.ok(c.chains.length > 0);
  // explain orders chains by severity, then impact; the tool by severity: compare by id.
  const key = (x) => JSON.stringify([x.id, x.cause, x.severity, x.culprit?.comm ?? null, x.timeline.map((t) => t.ts_utc)]);
  assert.equal(c.total, chains.chains.length, `${label}: chain count`);
  const cliKeys = new Set(chains.chains.map(key));
  for (const x of c.chains) assert.ok(cliKeys.has(key(x)), `${label}: chain ${x.id} as explain --json says`);
  const t = results.get_tail_breakdown;
  assert.deepEqual(t.ops.map((o) => [o.op, o.pid, o.tail_calls, o.unexplained.calls]),
    tail.ops.slice(0, t.ops.length).map((o) => [o.op, o.pid, o.tail_calls, o.unexplained.calls]), `${label}: tail`);
  // run_sql's largest answer is cut to the budget: a prefix of the CLI's rows, with a cursor.
  const sql = results.run_sql;
  assert.equal(sql.truncated, true, `${label}: 1000 rows of v_calls exceed the budget`);
  assert.equal(sql.next_cursor, `o:${sql.rows.length}`);
  assert.deepEqual(sql.columns, query.columns);
  assert.deepEqual(sql.column_types, query.column_types);
  assert.deepEqual(sql.rows, query.rows.slice(0, sql.rows.length), `${label}: run_sql rows = query --json rows`);
  const ts = query.columns.indexOf('ts_ns');
  assert.ok(query.rows.every((row) => typeof row[ts] === 'string'), 'ts_ns comes as exact decimal strings');

  const prompt = run(['--method', 'prompts/get', '--prompt-name', 'investigate', '--prompt-args', 'since=5m', 'question=why slow']).json;
  assert.match(prompt.messages[0].content.text, /get_causal_chains/, `${label}: prompt text`);
  const resources = run(['--method', 'resources/list']).json.resources.map((r) => r.uri).sort();
  assert.deepEqual(resources, ['causeway://schema', 'causeway://sessions'], `${label}: resources`);
  // One read per resource.
  const schemaRes = JSON.parse(run(['--method', 'resources/read', '--uri', 'causeway://schema']).json.contents[0].text);
  assert.deepEqual(schemaRes.objects.map((o) => o.name), schema.objects.map((o) => o.name), `${label}: schema resource`);
  const sessions = JSON.parse(run(['--method', 'resources/read', '--uri', 'causeway://sessions']).json.contents[0].text);
  assert.ok(sessions.sessions.length >= 1 && typeof sessions.sessions[0].started_utc === 'string', `${label}: sessions`);
  console.log(`ok - inspector over ${label}: ${EXPECTED_TOOLS.length} tools at their largest within ${REPLY_BUDGET} B, ` +
    'results = CLI --json, prompt, 2 resources, --strict clean');
}

matrix('stdio', ['--', bin, 'mcp', '--db', db, '--demo-dir', demoDir]);

const { cert, key } = makeCert(dir);
const { token, file: tokenFile } = makeToken(dir);
const srv = await startServer(bin, ['mcp', '--db', db, '--http', '127.0.0.1:0', '--tls-cert', cert, '--tls-key', key,
  '--token-file', tokenFile, '--demo-dir', demoDir]);
try {
  matrix('https', ['--transport', 'http', '--header', `Authorization: Bearer ${token}`, '--',
    `https://127.0.0.1:${srv.port}/mcp`], { NODE_EXTRA_CA_CERTS: cert });
} finally {
  await stopServer(srv.child);
}
