// One client address cannot take the HTTPS front door from the others (docs/SECURITY.md
// "Network clients"). The loopback has every 127.x address, so each party below is its own
// client address:
//  - handshakes: 127.0.0.2 replays a captured ClientHello on 3,000 connections, 32 at a time
//    (under every connection cap: only the handshake budget can refuse them). Each costs the
//    server a key exchange and a signature, the client nothing. Its budget is 400 at once and
//    200/s after: the rest are closed at accept, before any TLS work (no ServerHello).
//    127.0.0.3's call is answered right after, from its own budget.
//  - crowding: 127.0.0.4 keeps ~300 connections open that never finish a ClientHello, opening
//    a new one whenever one is closed. Its newest close only its own oldest (64 at most per
//    address), so 127.0.0.5's calls are answered within 1 s each.
import assert from 'node:assert/strict';
import net from 'node:net';
import { tempDir, makeFixture, startServer, stopServer, callTool, captureClientHello } from './lib.mjs';

const dir = tempDir();
const db = makeFixture(dir);
const srv = await startServer(dir, ['--db', db]);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function honestCalls(localAddress, n) {
  const times = [];
  for (let i = 0; i < n; i++) {
    const r = await callTool({ ...srv, localAddress }, 'get_trace_stats', { top_n: 3 }, 5000)
      .catch((e) => ({ status: 0, ms: Infinity, body: e.message }));
    assert.equal(r.status, 200, `${localAddress}: get_trace_stats: ${r.body}`);
    assert.ok(!JSON.parse(r.body).result.isError, r.body);
    times.push(r.ms);
    await sleep(200);
  }
  return times;
}

try {
  // handshakes
  const started = performance.now();
  const hello = await captureClientHello();
  const handshake = () => new Promise((resolve) => {
    const s = net.connect({ host: '127.0.0.1', port: srv.port, localAddress: '127.0.0.2' });
    s.once('connect', () => s.write(hello));
    s.once('data', () => { s.destroy(); resolve('done'); });  // the ServerHello: the server did the work
    s.once('error', () => resolve('refused'));
    s.once('close', () => resolve('refused'));
    s.setTimeout(15000, () => { s.destroy(); resolve('timeout'); });
  });
  const outcomes = [];
  let next = 0;
  await Promise.all(Array.from({ length: 32 }, async () => {
    while (next < 3000) {
      next++;
      outcomes.push(await handshake());
    }
  }));
  const elapsed = (performance.now() - started) / 1000;
  const done = outcomes.filter((o) => o === 'done').length;
  const refused = outcomes.filter((o) => o === 'refused').length;
  assert.ok(refused > 0, `all ${done} ClientHellos from one address were answered: no per-address budget`);
  const allowed = 400 + 200 * elapsed + 10;
  assert.ok(done <= allowed, `${done} handshakes in ${elapsed.toFixed(2)} s from one address, budget ${allowed.toFixed(0)}`);
  const [other] = await honestCalls('127.0.0.3', 1);
  console.log(`ok - handshakes: 3000 ClientHellos, 32 at a time, from 127.0.0.2 in ${elapsed.toFixed(2)} s: ${done} done, ${refused} closed at accept; ` +
    `127.0.0.3 answered in ${other.toFixed(0)} ms`);

  // crowding
  let open = 0;
  let opened = 0;
  let crowding = true;
  const sockets = new Set();
  const openOne = () => {
    if (!crowding) return;
    const s = net.connect({ host: '127.0.0.1', port: srv.port, localAddress: '127.0.0.4' });
    opened++;
    open++;
    sockets.add(s);
    s.on('connect', () => s.write(Buffer.from([0x16])));  // the first byte of a ClientHello, then nothing
    s.on('error', () => {});
    s.on('close', () => { open--; sockets.delete(s); setImmediate(openOne); });
  };
  for (let i = 0; i < 300; i++) openOne();
  await sleep(1000);
  const times = await honestCalls('127.0.0.5', 5);
  crowding = false;
  sockets.forEach((s) => s.destroy());
  const worst = Math.max(...times);
  assert.ok(worst < 1000, `127.0.0.5 waited ${times.map((t) => t.toFixed(0)).join(', ')} ms while 127.0.0.4 crowded (limit 1000)`);
  assert.ok(opened > 300, `the crowd never had a connection closed (${opened} opened): the per-address cap did nothing`);
  console.log(`ok - crowding: 127.0.0.4 opened ${opened} stalled connections (~300 at a time); 127.0.0.5 answered in ` +
    `${times.map((t) => t.toFixed(0)).join(', ')} ms`);
} finally {
  assert.equal(await stopServer(srv.child), 0);
}
