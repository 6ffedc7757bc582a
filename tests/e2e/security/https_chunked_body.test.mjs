// Issue 24 item 6: --max-body holds for chunked bodies. A 100 MB chunked POST (with the token)
// must be cut off at --max-body as it arrives: the server's resident set (VmHWM, from /proc)
// stays under 40 MB, the answer is 413, and the server keeps serving. Before the fix the body
// was read whole first (RSS 13 -> 140 MB).
import assert from 'node:assert/strict';
import https from 'node:https';
import { tempDir, makeFixture, startServer, stopServer, callTool, memory } from './lib.mjs';

const dir = tempDir();
const db = makeFixture(dir);
const srv = await startServer(dir, ['--db', db]);
try {
  const before = memory(srv.pid);
  const total = 100 << 20;
  const piece = Buffer.alloc(64 << 10, 'x');
  const outcome = await new Promise((resolve) => {
    const req = https.request({ host: '127.0.0.1', port: srv.port, method: 'POST', path: '/mcp', ca: srv.ca, servername: 'localhost',
      agent: false, headers: { Host: `localhost:${srv.port}`, 'Content-Type': 'application/json', Authorization: `Bearer ${srv.token}`,
        'Transfer-Encoding': 'chunked' } }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode }));
      res.on('error', () => resolve({ status: res.statusCode }));
    });
    req.on('error', (e) => resolve({ status: 0, error: e.code || e.message }));
    let sent = 0;
    const pump = () => {
      while (sent < total) {
        sent += piece.length;
        if (!req.write(piece)) return req.once('drain', pump);
      }
      req.end();
    };
    pump();
  });
  const after = memory(srv.pid);
  // The server may close while the client is still sending (then the client sees a reset);
  // whenever an answer got through, it is a 413.
  assert.ok(after.peak < 40 * 1024, `server RSS peak ${after.peak} kB under a 100 MB chunked body (limit 40 MB; before ${before.rss} kB)`);
  if (outcome.status) assert.equal(outcome.status, 413, JSON.stringify(outcome));
  const ok = await callTool(srv, 'get_trace_stats', { top_n: 1 }, 10000);
  assert.equal(ok.status, 200);
  console.log(`ok - 100 MB chunked body: ${outcome.status || outcome.error}, server RSS ${before.rss} kB -> peak ${after.peak} kB; still serving`);
} finally {
  assert.equal(await stopServer(srv.child), 0);
}
