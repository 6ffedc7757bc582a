// `causeway mcp` serving a DB made by `causeway merge` (docs/FLEET.md), driven by the official
// MCP TypeScript SDK client: get_trace_stats carries one system per host and a per-host
// breakdown, get_causal_chains names the culprit's host, and run_sql sees the merged_hosts table.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { env, tempDir } from './lib/common.mjs';

const bin = env('CAUSEWAY_BIN');
const dir = tempDir();

function causeway(args) {
  const r = spawnSync(bin, args, { encoding: 'utf8' });
  assert.equal(r.status, 0, `causeway ${args.join(' ')} failed: ${r.stderr}`);
  return r.stdout;
}
const sha = (f) => crypto.createHash('sha256').update(fs.readFileSync(f)).digest('hex');

// Two "hosts": a straggler job and a CPU-contention incident, each its own DB.
const a = path.join(dir, 'node-a.db');
const b = path.join(dir, 'node-b.db');
causeway(['demo', 'nccl-straggler', '--db', a]);
causeway(['demo', 'incident', '--db', b]);
const before = [sha(a), sha(b)];
const merged = path.join(dir, 'job.db');
const summary = JSON.parse(causeway(['merge', '-o', merged, a, b, '--json']));
assert.equal(summary.inputs.length, 2);
assert.deepEqual([sha(a), sha(b)], before, 'merge modified an input');
const calls = (doc) => doc.ops.reduce((n, o) => n + o.count, 0);
const inputCalls = calls(JSON.parse(causeway(['stats', '--json', '--db', a]))) +
  calls(JSON.parse(causeway(['stats', '--json', '--db', b])));

const transport = new StdioClientTransport({ command: bin, args: ['mcp', '--db', merged, '--demo-dir', path.join(dir, 'demo')], stderr: 'pipe' });
const client = new Client({ name: 'causeway-e2e-merged', version: '1.0.0' });
await client.connect(transport);

{
  const r = await client.callTool({ name: 'get_trace_stats', arguments: {} });
  assert.ok(!r.isError, JSON.stringify(r.content));
  const s = r.structuredContent;
  assert.equal(calls(s), inputCalls, 'merged call count is not the sum of the inputs');
  assert.ok(s.system && typeof s.system === 'object', 'no system object');
  assert.equal(s.systems.length, 2);
  for (const sys of s.systems) assert.equal(sys.synthetic, true, 'a demo host must say it is synthetic');
  assert.equal(s.ops_by_host.length, 2);
  assert.equal(s.ops_by_host.reduce((n, h) => n + h.calls, 0), inputCalls);
  console.log(`ok - get_trace_stats on a merged DB: ${inputCalls} calls = sum of inputs, 2 systems, per-host breakdown`);
}
{
  const r = await client.callTool({ name: 'get_causal_chains', arguments: { limit: 20 } });
  assert.ok(!r.isError, JSON.stringify(r.content));
  const chains = r.structuredContent.chains;
  const straggler = chains.find((c) => c.cause === 'nccl_straggler');
  assert.ok(straggler, `no nccl_straggler chain in ${chains.map((c) => c.cause)}`);
  assert.equal(straggler.culprit.rank, 2);
  assert.equal(straggler.culprit.host, 'demo-gpu-node');
  assert.ok(straggler.culprit.host_pid > 0 && straggler.culprit.pid === straggler.culprit.host_pid + 10000000,
    `host pid ${straggler.culprit.host_pid} vs merged pid ${straggler.culprit.pid}`);
  const cpu = chains.find((c) => c.cause === 'cpu_contention' && c.culprit && c.culprit.comm === 'tar');
  assert.ok(cpu, 'the second host\'s cpu_contention chain is missing');
  assert.ok(cpu.culprit.pid > 20000000, 'the second host\'s pids are shifted by 2 x 10000000');
  console.log('ok - get_causal_chains on a merged DB: straggler and tar named with host and host pid');
}
{
  const r = await client.callTool({ name: 'run_sql', arguments: { query: 'SELECT host_index, source_file FROM merged_hosts ORDER BY host_index' } });
  assert.ok(!r.isError, JSON.stringify(r.content));
  assert.deepEqual(r.structuredContent.rows, [[1, 'node-a.db'], [2, 'node-b.db']]);
  console.log('ok - run_sql sees merged_hosts');
}
await client.close();
