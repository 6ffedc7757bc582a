// Issue 24 item 8: a second `causeway mcp --http` on a port another server holds must fail
// (exit 1, saying the port is in use), not share the port with SO_REUSEPORT (the kernel would
// split clients between the two servers).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { env, tempDir, makeFixture, startServer, stopServer } from './lib.mjs';

const dir = tempDir();
const db = makeFixture(dir);
const first = await startServer(dir, ['--db', db]);
try {
  const second = spawn(env('CAUSEWAY_BIN'), ['mcp', '--db', db, '--http', `127.0.0.1:${first.port}`, '--state-dir', path.join(dir, 'state2')],
    { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, CAUSEWAY_MCP_TOKEN: 'x'.repeat(32) } });
  let err = '';
  second.stderr.on('data', (d) => { err += d; });
  const code = await new Promise((resolve) => {
    const timer = setTimeout(() => { second.kill('SIGKILL'); resolve('still running after 10 s'); }, 10000);
    second.on('exit', (c) => { clearTimeout(timer); resolve(c); });
  });
  assert.equal(code, 1, `second server on port ${first.port}: ${code}\n${err}`);
  assert.match(err, /in use/, err);
  assert.doesNotMatch(err, /serving https/, err);
  console.log(`ok - second server on a busy port: exit 1: ${err.trim().split('\n').pop()}`);
} finally {
  assert.equal(await stopServer(first.child), 0);
}
