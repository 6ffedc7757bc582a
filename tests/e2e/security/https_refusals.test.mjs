// Issue 25 items 4 and 5 (HTTP): refusals that lead clients the right way and an audit log
// without phantoms. Without a token, the OAuth discovery and registration paths answer 404
// (a static-token server has nothing to discover or register), /mcp answers 401 with
// `WWW-Authenticate: Bearer` (and error="invalid_token" for a wrong token, RFC 6750 §3.1),
// with `Connection: close` and no `Keep-Alive`; a 401 to a request with a body leaves exactly
// one audit line (before the fix the unread body was parsed as a next request: a phantom
// {"client":":-1","http":"","status":400}).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { tempDir, makeFixture, startServer, stopServer, request } from './lib.mjs';

const dir = tempDir();
const db = makeFixture(dir);
const audit = path.join(dir, 'audit.log');
const srv = await startServer(dir, ['--db', db, '--audit-log', audit]);
const ping = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' });
const json = { 'Content-Type': 'application/json' };
try {
  for (const p of ['/.well-known/oauth-protected-resource', '/.well-known/oauth-protected-resource/mcp',
    '/.well-known/oauth-authorization-server', '/.well-known/openid-configuration']) {
    const r = await request(srv, { method: 'GET', path: p });
    assert.equal(r.status, 404, `${p}: ${r.status} ${r.body}`);
    assert.doesNotMatch(r.body, /jsonrpc/, p);
  }
  const reg = await request(srv, { path: '/register', headers: json, body: JSON.stringify({ redirect_uris: ['http://localhost/cb'] }) });
  assert.equal(reg.status, 404, `/register: ${reg.status} ${reg.body}`);
  console.log('ok - no token: /.well-known/oauth-*, openid-configuration and /register answer 404, not a JSON-RPC 401');

  const missing = await request(srv, { headers: json, body: ping });
  assert.equal(missing.status, 401);
  assert.equal(missing.headers['www-authenticate'], 'Bearer realm="causeway"');
  assert.equal(missing.headers.connection, 'close');
  assert.equal(missing.headers['keep-alive'], undefined, JSON.stringify(missing.headers));
  const wrong = await request(srv, { headers: { ...json, Authorization: `Bearer ${'0'.repeat(64)}` }, body: ping });
  assert.equal(wrong.status, 401);
  assert.match(wrong.headers['www-authenticate'], /^Bearer realm="causeway", error="invalid_token"/);
  assert.equal(wrong.headers['keep-alive'], undefined);
  console.log(`ok - 401: ${missing.headers['www-authenticate']} / ${wrong.headers['www-authenticate']}; Connection: close, no Keep-Alive`);

  const good = await request(srv, { headers: { ...json, Authorization: `Bearer ${srv.token}` }, body: ping });
  assert.equal(good.status, 200);
  // Give the server a moment to write (and, before the fix, to add the phantom line).
  await new Promise((r) => setTimeout(r, 300));
  const lines = fs.readFileSync(audit, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
  const phantoms = lines.filter((l) => !l.http || l.client.startsWith(':'));
  assert.deepEqual(phantoms, [], `phantom audit lines:\n${lines.map((l) => JSON.stringify(l)).join('\n')}`);
  assert.equal(lines.filter((l) => l.status === 401).length, 2);
  assert.equal(lines.length, 8, lines.map((l) => JSON.stringify(l)).join('\n'));
  assert.ok(lines.every((l) => /^127\.0\.0\.1:\d+$/.test(l.client)), JSON.stringify(lines));
  console.log(`ok - audit log: ${lines.length} lines for 8 requests, statuses ${lines.map((l) => l.status).join(',')}`);
} finally {
  assert.equal(await stopServer(srv.child), 0);
}
