// MCP over HTTPS under load: 8 concurrent clients calling get_trace_stats on a large demo DB.
// Prints failures, p50/p99 latency, requests/s and the server's peak RSS (VmHWM).
// Usage (bench/mcp.cmake wires it as `ninja bench_mcp`):
//   node bench/mcp_bench.mjs CAUSEWAY_BIN [--events 10000000] [--clients 8] [--seconds 20 | --requests N] [--db PATH]
// --requests N: each client makes exactly N calls (instead of calling for --seconds).
// Needs only Node's standard library and the openssl CLI (test certificate made at run time).
import { spawn, spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';

const [bin, ...rest] = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = rest.indexOf(`--${name}`);
  return i >= 0 ? rest[i + 1] : dflt;
};
const events = Number(opt('events', 10_000_000));
const clients = Number(opt('clients', 8));
const seconds = Number(opt('seconds', 20));
const perClient = Number(opt('requests', 0));
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'causeway-bench-mcp-'));
let db = opt('db', '');
const givenDb = db !== '';

if (!db) {
  db = path.join(dir, 'bench.db');
  const t0 = Date.now();
  const r = spawnSync(bin, ['demo', 'incident', '--db', db, '--events', String(events), '--quiet'], { stdio: 'inherit' });
  if (r.status !== 0) throw new Error('causeway demo failed');
  console.log(`demo DB: ${events} events in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
}
const cert = path.join(dir, 'cert.pem');
const key = path.join(dir, 'key.pem');
spawnSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', key,
  '-out', cert, '-days', '1', '-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1']);
const token = crypto.randomBytes(32).toString('hex');
fs.writeFileSync(path.join(dir, 'token'), token, { mode: 0o600 });

const server = spawn(bin, ['mcp', '--db', db, '--http', '127.0.0.1:0', '--tls-cert', cert, '--tls-key', key,
  '--token-file', path.join(dir, 'token'), '--audit-log', path.join(dir, 'audit.log'), '--rate', '1000000'],
{ stdio: ['ignore', 'ignore', 'pipe'] });
const port = await new Promise((resolve, reject) => {
  let err = '';
  server.stderr.on('data', (d) => {
    err += d;
    const m = err.match(/serving https:\/\/[^\s]+:(\d+)\/mcp/);
    if (m) resolve(Number(m[1]));
  });
  server.on('exit', (c) => reject(new Error(`server exited ${c}: ${err}`)));
});

const agent = new https.Agent({ keepAlive: true, maxSockets: clients, ca: fs.readFileSync(cert) });
const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'get_trace_stats', arguments: { top_n: 20 } } });
function call() {
  return new Promise((resolve) => {
    const t0 = process.hrtime.bigint();
    const req = https.request({ host: '127.0.0.1', port, path: '/mcp', method: 'POST', agent, servername: 'localhost',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json', Authorization: `Bearer ${token}` } }, (res) => {
      let data = '';
      res.on('data', (d) => (data += d));
      res.on('end', () => {
        const ms = Number(process.hrtime.bigint() - t0) / 1e6;
        let ok = res.statusCode === 200;
        try { ok = ok && JSON.parse(data).result?.isError === false; } catch { ok = false; }
        resolve({ ok, ms });
      });
    });
    req.on('error', () => resolve({ ok: false, ms: Number(process.hrtime.bigint() - t0) / 1e6 }));
    req.end(body);
  });
}

let peakRss = 0;
const rssTimer = setInterval(() => {
  try {
    const m = fs.readFileSync(`/proc/${server.pid}/status`, 'utf8').match(/VmHWM:\s+(\d+) kB/);
    if (m) peakRss = Math.max(peakRss, Number(m[1]) * 1024);
  } catch {}
}, 200);

const first = await call();  // warm the page cache and the connection pool once
const lat = [];
let failures = first.ok ? 0 : 1;
const end = Date.now() + seconds * 1000;
const t0 = Date.now();
await Promise.all(Array.from({ length: clients }, async () => {
  for (let n = 0; perClient ? n < perClient : Date.now() < end; n++) {
    const r = await call();
    lat.push(r.ms);
    if (!r.ok) failures++;
  }
}));
const wall = (Date.now() - t0) / 1000;
clearInterval(rssTimer);
try {
  const m = fs.readFileSync(`/proc/${server.pid}/status`, 'utf8').match(/VmHWM:\s+(\d+) kB/);
  if (m) peakRss = Math.max(peakRss, Number(m[1]) * 1024);
} catch {}
server.kill('SIGTERM');
agent.destroy();
lat.sort((a, b) => a - b);
const pct = (p) => lat[Math.min(lat.length - 1, Math.floor(p * lat.length))];
const result = {
  clients, seconds: wall, events: givenDb ? `from ${db}` : events, requests: lat.length, failures, first_call_ms: +first.ms.toFixed(1),
  p50_ms: +pct(0.5).toFixed(2), p99_ms: +pct(0.99).toFixed(2), max_ms: +lat.at(-1).toFixed(2),
  req_per_s: +(lat.length / wall).toFixed(1), server_peak_rss_mb: +(peakRss / 1048576).toFixed(1), cpus: os.cpus().length,
};
console.log(JSON.stringify(result));
fs.rmSync(dir, { recursive: true, force: true });
process.exit(failures === 0 && peakRss < 100 * 1048576 ? 0 : 1);
