// `causeway mcp` over stdio, driven by the official MCP TypeScript SDK client, plus raw
// protocol checks the SDK would never send (malformed lines, the 2026-07-28 era, EOF).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import readline from 'node:readline';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { env, tempDir, makeFixture, exerciseClient, expectError, MODERN_META } from './lib/common.mjs';

const bin = env('CAUSEWAY_BIN');
const dir = tempDir();
const db = makeFixture(dir);
const serverArgs = ['mcp', '--db', db, '--demo-dir', path.join(dir, 'demo')];

// 1. Legacy era through the SDK (it opens with initialize).
{
  const transport = new StdioClientTransport({ command: bin, args: serverArgs, stderr: 'pipe' });
  const client = new Client({ name: 'causeway-e2e', version: '1.0.0' });
  await client.connect(transport);
  assert.equal(client.getServerVersion().name, 'causeway');
  await exerciseClient(client, 'stdio');
  await client.close();
  console.log('ok - SDK client over stdio: tools, prompt, resources, every tool validated');
}

// 2. Raw lines: malformed JSON, then still serving; modern era; EOF exit time.
{
  const child = spawn(bin, serverArgs, { stdio: ['pipe', 'pipe', 'pipe'] });
  const lines = readline.createInterface({ input: child.stdout });
  const pending = [];
  const waiters = [];
  lines.on('line', (l) => {
    const msg = JSON.parse(l);  // stdout carries protocol only: every line must parse
    if (waiters.length) waiters.shift()(msg);
    else pending.push(msg);
  });
  const next = () => new Promise((resolve) => (pending.length ? resolve(pending.shift()) : waiters.push(resolve)));
  const send = (obj) => child.stdin.write((typeof obj === 'string' ? obj : JSON.stringify(obj)) + '\n');

  send('{"jsonrpc":"2.0","id":1,"method":"ping"');  // truncated
  expectError(await next(), -32700, null);
  send({ jsonrpc: '2.0', id: 2, method: 'ping' });
  assert.deepEqual((await next()).id, 2);
  send({ jsonrpc: '2.0', id: 3, method: 'no/such' });
  expectError(await next(), -32601, 3);
  send({ jsonrpc: '2.0', id: 'x', method: 'tools/call', params: { name: 'nope', arguments: {} } });
  expectError(await next(), -32602, 'x');
  send({ jsonrpc: '2.0', method: 'notifications/initialized' });  // never answered
  send({ jsonrpc: '2.0', id: 4, method: 'initialize', params: { protocolVersion: '2024-11-05', capabilities: {}, clientInfo: { name: 'old', version: '0' } } });
  assert.equal((await next()).result.protocolVersion, '2024-11-05');
  send({ jsonrpc: '2.0', id: 5, method: 'initialize', params: { protocolVersion: '2023-01-01', capabilities: {}, clientInfo: { name: 'x', version: '0' } } });
  assert.equal((await next()).result.protocolVersion, '2025-11-25');

  // Modern era: discover, then a stateless tools/call with _meta.
  send({ jsonrpc: '2.0', id: 10, method: 'server/discover', params: { _meta: MODERN_META } });
  const disc = await next();
  assert.ok(disc.result.supportedVersions.includes('2026-07-28'));
  assert.equal(disc.result.resultType, 'complete');
  send({ jsonrpc: '2.0', id: 11, method: 'tools/list', params: { _meta: MODERN_META } });
  const list = await next();
  assert.equal(list.result.resultType, 'complete');
  assert.ok(list.result.ttlMs > 0 && list.result.cacheScope);
  send({ jsonrpc: '2.0', id: 12, method: 'tools/call', params: { name: 'get_trace_stats', arguments: { top_n: 2 }, _meta: { ...MODERN_META, progressToken: 'p1' } } });
  const call = await next();
  assert.equal(call.result.resultType, 'complete');
  assert.equal(call.result.structuredContent.ops.length, 2);
  send({ jsonrpc: '2.0', id: 13, method: 'tools/list', params: { _meta: { ...MODERN_META, 'io.modelcontextprotocol/protocolVersion': '2099-01-01' } } });
  expectError(await next(), -32022, 13);
  // The stateless era has no handshake and needs the client's capabilities on every request.
  send({ jsonrpc: '2.0', id: 14, method: 'initialize', params: { _meta: MODERN_META } });
  expectError(await next(), -32601, 14);
  send({ jsonrpc: '2.0', id: 15, method: 'tools/list', params: { _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' } } });
  expectError(await next(), -32602, 15);

  // EOF: the server exits promptly.
  const t0 = Date.now();
  const exited = new Promise((resolve) => child.on('exit', (code) => resolve(code)));
  child.stdin.end();
  const code = await exited;
  const ms = Date.now() - t0;
  assert.equal(code, 0);
  assert.ok(ms < 2000, `exit after EOF took ${ms} ms`);
  console.log(`ok - raw stdio: -32700 then still serving, both eras, -32022, modern initialize -32601, missing capabilities -32602, exit ${ms} ms after EOF`);
}

// 3. SIGTERM: exits promptly too.
{
  const child = spawn(bin, serverArgs, { stdio: ['pipe', 'pipe', 'pipe'] });
  await new Promise((r) => setTimeout(r, 200));
  const t0 = Date.now();
  const exited = new Promise((resolve) => child.on('exit', (code) => resolve(code)));
  child.kill('SIGTERM');
  const code = await exited;
  assert.ok(Date.now() - t0 < 2000);
  assert.equal(code, 0);
  console.log('ok - SIGTERM exit');
}
