// A scripted assistant (the official SDK client) follows the `investigate` prompt on the
// incident demo, over stdio and over HTTPS, and must reach the culprit by tool calls alone:
// every value it uses in a step (op, pid, culprit, the example query) comes from an earlier
// tool result, never from this file. Only the final assertion knows the demo's answer.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { env, tempDir } from './lib/common.mjs';
import { makeCert, makeToken, startServer, stopServer, fetchWithCa } from './lib/server.mjs';

const bin = env('CAUSEWAY_BIN');
const dir = tempDir();
const db = path.join(dir, 'incident.db');
const demo = spawnSync(bin, ['demo', 'incident', '--db', db, '--quiet'], { encoding: 'utf8' });
assert.equal(demo.status, 0, demo.stderr);

async function call(client, name, args) {
  const r = await client.callTool({ name, arguments: args });
  assert.equal(r.isError, false, `${name}: ${r.content?.[0]?.text}`);
  return r;
}

async function investigate(client, label) {
  const steps = [];
  const prompt = await client.getPrompt({ name: 'investigate', arguments: {} });
  const script = prompt.messages[0].content.text;
  // The prompt names the walk: cause -> evidence -> follow-up SQL -> fix.
  const order = ['get_check', 'get_causal_chains', 'get_trace_stats', 'get_stacks', 'get_tail_breakdown', 'describe_schema',
    'run_sql', 'Fix'];
  const at = order.map((w) => script.indexOf(w));
  assert.ok(at.every((i) => i >= 0) && at.every((i, k) => k === 0 || i > at[k - 1]), `${label}: prompt order ${at}`);

  // 1. Readiness: which DB is served.
  const check = (await call(client, 'get_check', {})).structuredContent;
  assert.equal(check.db.path, db);
  steps.push(`get_check: ${check.db.sessions} session(s)`);

  // 2. Cause: the most severe chain, with the severity the prompt asks for.
  const chains = (await call(client, 'get_causal_chains', { min_severity: 'MEDIUM' })).structuredContent;
  assert.ok(chains.chains.length > 0, `${label}: no chain`);
  const top = chains.chains[0];
  const victim = { op: top.op, pid: top.pid };
  steps.push(`get_causal_chains: ${top.severity} ${top.cause} on ${top.op} pid ${top.pid}, culprit ${top.culprit?.comm}`);

  // 3. Evidence: the victim op's distribution and its call sites.
  const stats = (await call(client, 'get_trace_stats', victim)).structuredContent;
  const row = stats.ops.find((o) => o.op === victim.op && o.pid === victim.pid);
  assert.ok(row && row.p99_us > row.p50_us, `${label}: victim op in stats`);
  const stacks = (await call(client, 'get_stacks', victim)).structuredContent;
  assert.ok(stacks.stacks.length > 0, `${label}: stacks`);
  // How much of the victim op's p99 tail the chain's cause explains.
  const tail = (await call(client, 'get_tail_breakdown', victim)).structuredContent;
  const tailOp = tail.ops.find((o) => o.op === victim.op && o.pid === victim.pid);
  assert.ok(tailOp && tailOp.causes.length > 0, `${label}: tail breakdown of the victim op`);
  assert.equal(tailOp.causes[0].cause, top.cause, `${label}: the chain's cause leads the tail`);
  assert.ok(tailOp.causes[0].chain_ids.includes(top.id), `${label}: the tail names the chain`);
  steps.push(`evidence: ${row.count} calls, p50 ${row.p50_us} us, p99 ${row.p99_us} us; ${stacks.stacks.length} stack(s); ` +
    `${Math.round(tailOp.causes[0].call_share * 100)}% of the p99 tail is ${tailOp.causes[0].cause}`);

  // 4. Follow-up SQL: the schema's example for this cause, with the victim's pid put in.
  const schema = (await call(client, 'describe_schema', {})).structuredContent;
  const example = schema.examples.find((e) => /preempt/i.test(e.question) && /v_sched/.test(e.sql));
  assert.ok(example, `${label}: an example query for CPU contention`);
  const sql = /prev_pid\s*=\s*\d+/.test(example.sql)
    ? example.sql.replace(/prev_pid\s*=\s*\d+/, `prev_pid = ${victim.pid}`)
    : example.sql.replace(/\bWHERE\b/i, `WHERE prev_pid = ${victim.pid} AND`);
  const result = (await call(client, 'run_sql', { query: sql })).structuredContent;
  const commCol = result.columns.includes('next_comm') ? result.columns.indexOf('next_comm')
    : result.columns.findIndex((c) => /comm/.test(c));
  assert.ok(commCol >= 0 && result.rows.length > 0, `${label}: run_sql rows`);
  const sqlCulprit = result.rows[0][commCol];
  steps.push(`run_sql: ${sql} -> top preemptor ${sqlCulprit} (${result.rows[0].join(', ')})`);

  // 5. Fix: the chain's recommendation, and the two independent routes agree on the culprit.
  assert.equal(sqlCulprit, top.culprit.comm, `${label}: SQL and chain name the same culprit`);
  assert.ok(top.recommendation && top.recommendation.includes(sqlCulprit), `${label}: fix names the culprit`);
  steps.push(`fix: ${top.recommendation}`);
  return { cause: top.cause, culprit: sqlCulprit, steps };
}

// stdio
{
  const client = new Client({ name: 'scripted-assistant', version: '1.0.0' });
  await client.connect(new StdioClientTransport({ command: bin, args: ['mcp', '--db', db], stderr: 'pipe' }));
  const r = await investigate(client, 'stdio');
  await client.close();
  assert.deepEqual([r.cause, r.culprit], ['cpu_contention', 'tar']);
  for (const s of r.steps) console.log(`# stdio ${s}`);
  console.log('ok - stdio: the scripted assistant reached cpu_contention by tar through the investigate prompt');
}

// HTTPS
{
  const { cert, key, ca } = makeCert(dir);
  const { token, file } = makeToken(dir);
  const srv = await startServer(bin, ['mcp', '--db', db, '--http', '127.0.0.1:0', '--tls-cert', cert, '--tls-key', key,
    '--token-file', file]);
  try {
    const client = new Client({ name: 'scripted-assistant', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`https://localhost:${srv.port}/mcp`),
      { requestInit: { headers: { Authorization: `Bearer ${token}` } }, fetch: fetchWithCa(ca) }));
    const r = await investigate(client, 'https');
    await client.close();
    assert.deepEqual([r.cause, r.culprit], ['cpu_contention', 'tar']);
    console.log('ok - https: the scripted assistant reached cpu_contention by tar through the investigate prompt');
  } finally {
    await stopServer(srv.child);
  }
}
