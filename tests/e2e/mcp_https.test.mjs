// `causeway mcp --http` (Streamable HTTP over TLS 1.3), driven by the official MCP TypeScript
// SDK client, plus the security edges: bearer token, Origin, TLS version, limits, audit log.
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import tls from 'node:tls';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { env, tempDir, makeFixture, exerciseClient, MODERN_META } from './lib/common.mjs';
import { makeCert, makeToken, startServer, stopServer, fetchWithCa } from './lib/server.mjs';

const bin = env('CAUSEWAY_BIN');
const dir = tempDir();
const db = makeFixture(dir);
const { cert, key, ca } = makeCert(dir);
const { token, file: tokenFile } = makeToken(dir);
const audit = path.join(dir, 'audit.log');
const base = ['mcp', '--db', db, '--http', '127.0.0.1:0', '--tls-cert', cert, '--tls-key', key,
  '--token-file', tokenFile, '--demo-dir', path.join(dir, 'demo')];

const srv = await startServer(bin, [...base, '--audit-log', audit]);
const url = `https://127.0.0.1:${srv.port}/mcp`;
const fetch = fetchWithCa(ca);
const auth = { Authorization: `Bearer ${token}` };
const post = (body, headers = {}) => fetch(url, {
  method: 'POST',
  headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', ...headers },
  body: typeof body === 'string' ? body : JSON.stringify(body),
});

try {
  // 1. The SDK client (legacy era: initialize, then requests with MCP-Protocol-Version).
  const client = new Client({ name: 'causeway-e2e', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: auth }, fetch }));
  assert.equal(client.getServerVersion().name, 'causeway');
  await exerciseClient(client, 'https');
  // Concurrent calls are served from the connection pool.
  const many = await Promise.all(Array.from({ length: 8 }, () => client.callTool({ name: 'get_trace_stats', arguments: { top_n: 3 } })));
  assert.ok(many.every((r) => !r.isError && r.structuredContent.ops.length === 3));
  await client.close();
  console.log('ok - SDK client over HTTPS: tools, prompt, resources, every tool validated, 8 concurrent calls');

  // 2. Authentication and Origin.
  const ping = { jsonrpc: '2.0', id: 1, method: 'ping' };
  assert.equal((await post(ping)).status, 401);
  const wrong = await post(ping, { Authorization: `Bearer ${token.slice(0, -1)}x` });
  assert.equal(wrong.status, 401);
  assert.match(wrong.headers.get('www-authenticate') ?? '', /Bearer/);
  assert.equal((await post(ping, { Authorization: `Basic ${token}` })).status, 401);
  assert.equal((await post(ping, { ...auth, Origin: 'https://evil.example' })).status, 403);
  assert.equal((await post(ping, { ...auth, Origin: 'http://localhost:3000' })).status, 200);
  console.log('ok - missing/wrong bearer 401, bad Origin 403');

  // 3. HTTP semantics.
  assert.equal((await fetch(url, { method: 'GET', headers: auth })).status, 405);
  assert.equal((await fetch(url, { method: 'DELETE', headers: auth })).status, 405);
  const note = await post({ jsonrpc: '2.0', method: 'notifications/initialized' }, auth);
  assert.equal(note.status, 202);
  assert.equal((await post(ping, { ...auth, 'MCP-Protocol-Version': '1999-01-01' })).status, 400);
  assert.equal((await post('{"jsonrpc":', auth)).status, 400);
  const big = await post({ jsonrpc: '2.0', id: 2, method: 'ping', params: { pad: 'x'.repeat(2 << 20) } }, auth);
  assert.equal(big.status, 413);
  console.log('ok - GET/DELETE 405, notification 202, bad version header 400, parse error 400, body limit 413');

  // 4. Modern era (2026-07-28): no handshake, _meta on each request.
  const modern = (method, name) => ({ ...auth, 'MCP-Protocol-Version': '2026-07-28', 'Mcp-Method': method,
    ...(name ? { 'Mcp-Name': name } : {}) });
  const disc = await (await post({ jsonrpc: '2.0', id: 3, method: 'server/discover', params: { _meta: MODERN_META } },
    modern('server/discover'))).json();
  assert.ok(disc.result.supportedVersions.includes('2026-07-28'));
  const call = await (await post({ jsonrpc: '2.0', id: 4, method: 'tools/call',
    params: { name: 'get_causal_chains', arguments: { limit: 1 }, _meta: MODERN_META } },
    modern('tools/call', 'get_causal_chains'))).json();
  assert.equal(call.result.resultType, 'complete');
  assert.equal(call.result.structuredContent.chains.length, 1);
  const unsupported = await post({ jsonrpc: '2.0', id: 5, method: 'tools/list',
    params: { _meta: { ...MODERN_META, 'io.modelcontextprotocol/protocolVersion': '2099-01-01' } } }, auth);
  assert.equal((await unsupported.json()).error.code, -32022);
  // Refusals echo the request id and map onto HTTP statuses.
  const refused = async (body, headers, status, code) => {
    const r = await post(body, headers);
    const j = await r.json();
    assert.equal(r.status, status, JSON.stringify(j));
    assert.equal(j.error.code, code);
    assert.equal(j.id, body.id);
  };
  await refused({ jsonrpc: '2.0', id: 7, method: 'tools/list', params: {} }, modern('tools/list'), 400, -32602);
  await refused({ jsonrpc: '2.0', id: 8, method: 'tools/list', params: { _meta: MODERN_META } }, modern('prompts/list'), 400, -32020);
  await refused({ jsonrpc: '2.0', id: 9, method: 'tools/call', params: { name: 'get_check', _meta: MODERN_META } },
    modern('tools/call', 'run_sql'), 400, -32020);
  await refused({ jsonrpc: '2.0', id: 10, method: 'initialize', params: { _meta: MODERN_META } }, modern('initialize'), 404, -32601);
  await refused({ jsonrpc: '2.0', id: 11, method: 'ping', params: { _meta: MODERN_META } }, modern('ping'), 404, -32601);
  // Also when the client asked for a progress stream: the refusal is not streamed.
  await refused({ jsonrpc: '2.0', id: 12, method: 'tools/call',
    params: { name: 'get_check', arguments: {}, _meta: { ...MODERN_META, progressToken: 'p' } } },
  modern('tools/call', 'run_sql'), 400, -32020);
  console.log('ok - modern era: server/discover, stateless tools/call, -32022; missing _meta 400/-32602, header mismatch 400/-32020, initialize/ping 404/-32601, ids echoed');

  // 5. Progress streams as SSE when the client asks for it.
  const sse = await post({ jsonrpc: '2.0', id: 6, method: 'tools/call',
    params: { name: 'run_demo', arguments: { scenario: 'incident' }, _meta: { progressToken: 'tok' } } }, auth);
  assert.match(sse.headers.get('content-type'), /text\/event-stream/);
  const events = (await sse.text()).split('\n').filter((l) => l.startsWith('data: ')).map((l) => JSON.parse(l.slice(6)));
  assert.ok(events.some((e) => e.method === 'notifications/progress' && e.params.progressToken === 'tok'));
  assert.equal(events.at(-1).id, 6);
  assert.equal(events.at(-1).result.isError, false);
  console.log(`ok - SSE progress: ${events.length - 1} progress notifications then the result`);

  // 6. TLS 1.2 is refused.
  const tls12 = await new Promise((resolve) => {
    const s = tls.connect({ host: '127.0.0.1', port: srv.port, ca, servername: 'localhost', minVersion: 'TLSv1.2', maxVersion: 'TLSv1.2' });
    s.on('secureConnect', () => { s.destroy(); resolve('connected'); });
    s.on('error', (e) => resolve(e.code || e.message));
  });
  assert.notEqual(tls12, 'connected');
  const tls13 = await new Promise((resolve) => {
    const s = tls.connect({ host: '127.0.0.1', port: srv.port, ca, servername: 'localhost' });
    s.on('secureConnect', () => { const v = s.getProtocol(); s.destroy(); resolve(v); });
    s.on('error', (e) => resolve(e.message));
  });
  assert.equal(tls13, 'TLSv1.3');
  console.log(`ok - TLS 1.2 refused (${tls12}), TLS 1.3 negotiated`);

  // 7. Audit log: one line per request, never the token.
  const log = fs.readFileSync(audit, 'utf8');
  const lines = log.trim().split('\n').map((l) => JSON.parse(l));
  assert.ok(lines.some((l) => l.method === 'tools/call' && l.tool === 'get_trace_stats' && l.status === 200 && l.ms >= 0));
  assert.ok(lines.some((l) => l.status === 401));
  assert.ok(!log.includes(token), 'token must never be logged');
  console.log(`ok - audit log: ${lines.length} lines, no token`);
} finally {
  const code = await stopServer(srv.child);
  assert.equal(code, 0);
}

// 8. Rate limit: 429 beyond the per-client budget, a client being one bearer token from one
// address: a second user's token behind the same (proxy) address keeps its own budget, and
// wrong tokens neither pass nor spend it.
{
  const second = crypto.randomBytes(32).toString('hex');
  const multi = path.join(dir, 'tokens');
  fs.writeFileSync(multi, `# one token per user\n${token}\n\n${second}\n`, { mode: 0o600 });
  const s = await startServer(bin, ['mcp', '--db', db, '--http', '127.0.0.1:0', '--tls-cert', cert, '--tls-key', key,
    '--token-file', multi, '--rate', '5']);
  const f = fetchWithCa(ca);
  const ping = async (bearer, i) => {
    const r = await f(`https://127.0.0.1:${s.port}/mcp`, { method: 'POST',
      headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${bearer}` },
      body: JSON.stringify({ jsonrpc: '2.0', id: i, method: 'ping' }) });
    await r.arrayBuffer();
    return r.status;
  };
  const first = [], other = [], wrong = [];
  for (let i = 0; i < 8; i++) first.push(await ping(token, i));
  for (let i = 0; i < 3; i++) other.push(await ping(second, i));
  for (let i = 0; i < 7; i++) wrong.push(await ping('x'.repeat(40), i));
  await stopServer(s.child);
  assert.deepEqual(first, [200, 200, 200, 200, 200, 429, 429, 429], first.join(','));
  assert.deepEqual(other, [200, 200, 200], other.join(','));
  assert.deepEqual(wrong, [401, 401, 401, 401, 401, 429, 429], wrong.join(','));
  console.log(`ok - rate limit per token and address: ${first.join(',')}; second token ${other.join(',')}; wrong token ${wrong.join(',')}`);
}

// 9. No certificate given: a local CA and a leaf it signs are generated (keys 0600, fingerprint
// printed); no token configured: a random one is generated and printed to stderr only.
{
  const state = path.join(dir, 'state');
  const s = await startServer(bin, ['mcp', '--db', db, '--http', '127.0.0.1:0', '--state-dir', state], { CAUSEWAY_MCP_TOKEN: '' });
  const err = s.stderr();
  await stopServer(s.child);
  assert.match(err, /fingerprint ([0-9A-F]{2}:){31}[0-9A-F]{2}/);
  const generated = err.match(/generated bearer token: ([0-9a-f]{64})/);
  assert.ok(generated, err);
  assert.equal(fs.statSync(path.join(state, 'mcp-key.pem')).mode & 0o777, 0o600);
  assert.equal(fs.statSync(path.join(state, 'mcp-ca-key.pem')).mode & 0o777, 0o600);
  assert.match(err, /NODE_EXTRA_CA_CERTS=\S*mcp-ca\.pem/);
  const pem = fs.readFileSync(path.join(state, 'mcp-ca.pem'), 'utf8');
  assert.match(pem, /BEGIN CERTIFICATE/);
  // The generated certificate is accepted by a client that trusts the local CA.
  const s2 = await startServer(bin, ['mcp', '--db', db, '--http', '127.0.0.1:0', '--state-dir', state], { CAUSEWAY_MCP_TOKEN: token });
  const r = await fetchWithCa(pem)(`https://127.0.0.1:${s2.port}/mcp`, { method: 'POST',
    headers: { 'Content-Type': 'application/json', ...auth }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }) });
  assert.equal(r.status, 200);
  await stopServer(s2.child);
  console.log('ok - generated local CA and certificate (keys 0600, fingerprint printed), trusted through the CA; generated token, token from $CAUSEWAY_MCP_TOKEN');
}
