// Shared by the HTTPS security tests: a real `causeway mcp --http` process on an ephemeral
// port with its own generated local CA (--state-dir) and a token from the environment, and a
// client that uses only Node's built-in https (no npm packages needed).
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import https from 'node:https';
import net from 'node:net';
import path from 'node:path';
import tls from 'node:tls';

import { env, tempDir as tempDirWithPrefix, waitForServing } from '../lib/process.mjs';

export { env, makeFixture, stopServer } from '../lib/process.mjs';

export function tempDir() {
  return tempDirWithPrefix('causeway-security-');
}

// Resolves { child, port, pid, ca, token, stderr() } once the server says where it listens.
export function startServer(dir, extraArgs = [], listen = '127.0.0.1:0') {
  const token = crypto.randomBytes(32).toString('hex');
  const state = path.join(dir, 'state');
  const child = spawn(env('CAUSEWAY_BIN'), ['mcp', '--http', listen, '--state-dir', state, ...extraArgs],
    { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, CAUSEWAY_MCP_TOKEN: token } });
  return waitForServing(child, 20000).then(({ port, stderr }) => {
    // The local CA when the server made one, else (older layouts) the certificate itself.
    const caFile = fs.existsSync(path.join(state, 'mcp-ca.pem')) ? 'mcp-ca.pem' : 'mcp-cert.pem';
    return { child, port, pid: child.pid, token, ca: fs.readFileSync(path.join(state, caFile)), stderr };
  });
}

// One HTTPS request on a fresh connection; resolves { status, headers, body, ms }. From
// srv.localAddress when set (127.0.0.2 …: another client address on the loopback).
export function request(srv, { method = 'POST', path: p = '/mcp', headers = {}, body, timeoutMs = 10000 } = {}) {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = https.request({ host: '127.0.0.1', port: srv.port, localAddress: srv.localAddress, method, path: p, ca: srv.ca, servername: 'localhost',
      agent: false, headers: { Host: `localhost:${srv.port}`, ...headers }, timeout: timeoutMs }, (res) => {
      let data = '';
      res.setEncoding('utf8');
      res.on('data', (d) => { data += d; });
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: data, ms: performance.now() - started }));
    });
    req.on('timeout', () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on('error', reject);
    if (body !== undefined) req.end(body);
    else req.end();
  });
}

const MODERN_META = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };

// A stateless (2026-07-28) tools/call, as a client with the token sends it.
export function callTool(srv, name, args, timeoutMs) {
  const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args, _meta: MODERN_META } });
  return request(srv, { body, timeoutMs, headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${srv.token}`,
    'MCP-Protocol-Version': '2026-07-28', 'Mcp-Method': 'tools/call', 'Mcp-Name': name } });
}

// Resident set of a process, kB: now (VmRSS) and its peak so far (VmHWM).
export function memory(pid) {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (key) => Number(status.match(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm'))[1]);
  return { rss: kb('VmRSS'), peak: kb('VmHWM') };
}

// The bytes of a real TLS 1.3 ClientHello (from Node's own client), to replay or trickle.
export function captureClientHello() {
  return new Promise((resolve) => {
    const server = net.createServer((s) => s.once('data', (d) => { resolve(d); s.destroy(); server.close(); }));
    server.listen(0, '127.0.0.1', () => {
      const c = tls.connect({ host: '127.0.0.1', port: server.address().port, servername: 'localhost' });
      c.on('error', () => {});
    });
  });
}
