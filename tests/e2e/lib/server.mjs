// Starting `causeway mcp --http` for tests: test certificate and token made here, at test
// time (never committed); the ephemeral port is read from the server's stderr.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Agent, fetch as undiciFetch } from 'undici';
import { waitForServing } from './process.mjs';

export function makeCert(dir) {
  const cert = path.join(dir, 'cert.pem');
  const key = path.join(dir, 'key.pem');
  const r = spawnSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes',
    '-keyout', key, '-out', cert, '-days', '1', '-subj', '/CN=localhost',
    '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1'], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  fs.chmodSync(key, 0o600);
  return { cert, key, ca: fs.readFileSync(cert) };
}

export function makeToken(dir) {
  const token = crypto.randomBytes(32).toString('hex');
  const file = path.join(dir, 'token');
  fs.writeFileSync(file, token + '\n', { mode: 0o600 });
  return { token, file };
}

export { stopServer } from './process.mjs';

// Resolves { child, port, stderr() } once the server says where it listens.
export function startServer(bin, args, extraEnv = {}) {
  const child = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...extraEnv } });
  return waitForServing(child, 15000);
}

// fetch that trusts the test CA (the SDK transport takes it as its `fetch` option).
export function fetchWithCa(ca) {
  const dispatcher = new Agent({ connect: { ca } });
  return (url, init = {}) => undiciFetch(url, { ...init, dispatcher });
}
