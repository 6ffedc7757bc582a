// Process and file helpers every end-to-end test shares. Node built-ins only: the security
// tests import this without the npm packages the SDK tests need.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export function env(name) {
  const v = process.env[name];
  if (!v) {
    console.error(`SKIP: $${name} is not set (run through ctest)`);
    process.exit(77);
  }
  return v;
}

// Removed when the test exits (pass or fail); KEEP_E2E_TMP=1 keeps it for debugging.
export function tempDir(prefix = 'causeway-e2e-') {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  if (!process.env.KEEP_E2E_TMP) process.on('exit', () => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

// The demo fixture DB every tool is called on.
export function makeFixture(dir) {
  const db = path.join(dir, 'trace.db');
  const r = spawnSync(env('CAUSEWAY_MCP_FIXTURE'), [db], { encoding: 'utf8' });
  assert.equal(r.status, 0, `fixture failed: ${r.stderr}`);
  return db;
}

// Resolves { child, port, stderr() } once `causeway mcp --http` says where it listens (the
// ephemeral port is read from its stderr); rejects if it exits or stays silent timeoutMs.
export function waitForServing(child, timeoutMs) {
  let err = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start: ${err}`)), timeoutMs);
    child.stderr.on('data', (d) => {
      err += d;
      const m = err.match(/serving https:\/\/[^\s]+:(\d+)\/mcp/);
      if (m && !child.port) {
        child.port = Number(m[1]);
        clearTimeout(timer);
        resolve({ child, port: child.port, stderr: () => err });
      }
    });
    child.on('exit', (code) => reject(new Error(`server exited ${code}: ${err}`)));
  });
}

export function stopServer(child) {
  return new Promise((resolve) => {
    if (child.exitCode !== null) return resolve(child.exitCode);
    child.removeAllListeners('exit');
    child.on('exit', (code) => resolve(code));
    child.kill('SIGTERM');
  });
}
