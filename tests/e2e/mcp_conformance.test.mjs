// The official MCP conformance suite (npm @modelcontextprotocol/conformance, Node 22) against
// `causeway mcp --http`: the server scenarios that need no fixture tools of the suite's own
// reference server. The suite cannot send a bearer token or trust a test CA, so a loopback
// relay adds the Authorization header and forwards every other header (Host and Origin
// included, for the DNS-rebinding scenario) to the TLS server unchanged.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import http from 'node:http';
import tls from 'node:tls';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Agent, request } from 'undici';
import { env, tempDir, makeFixture } from './lib/common.mjs';
import { makeCert, makeToken, startServer, stopServer } from './lib/server.mjs';

const SCENARIOS = ['server-initialize', 'ping', 'logging-set-level', 'tools-list', 'prompts-list', 'resources-list',
  'dns-rebinding-protection'];

const major = Number(process.versions.node.split('.')[0]);
if (major < 22) {
  console.error(`SKIP: the conformance suite needs Node >= 22 (this is ${process.versions.node}); run npm ci --prefix tests/e2e`);
  process.exit(77);
}
const bin = env('CAUSEWAY_BIN');
const here = path.dirname(fileURLToPath(import.meta.url));
const dir = tempDir();
const db = makeFixture(dir);
const { cert, key, ca } = makeCert(dir);
const { token, file: tokenFile } = makeToken(dir);
const srv = await startServer(bin, ['mcp', '--db', db, '--http', '127.0.0.1:0', '--tls-cert', cert, '--tls-key', key,
  '--token-file', tokenFile]);
// The certificate is checked against "localhost" whatever Host header the suite sends.
const dispatcher = new Agent({ connect: { ca, servername: 'localhost',
  checkServerIdentity: (_host, peer) => tls.checkServerIdentity('localhost', peer) } });

const relay = http.createServer(async (req, res) => {
  const chunks = [];
  for await (const c of req) chunks.push(c);
  const headers = { ...req.headers, authorization: `Bearer ${token}` };
  delete headers.connection;
  delete headers['keep-alive'];
  delete headers['transfer-encoding'];
  try {
    const r = await request(`https://127.0.0.1:${srv.port}${req.url}`, {
      method: req.method, headers, body: chunks.length ? Buffer.concat(chunks) : undefined, dispatcher,
    });
    const out = { ...r.headers };
    delete out['transfer-encoding'];
    delete out.connection;
    res.writeHead(r.statusCode, out);
    for await (const c of r.body) res.write(c);
    res.end();
  } catch (e) {
    console.error(`relay: ${e}`);
    res.writeHead(502);
    res.end(String(e));
  }
});
await new Promise((r) => relay.listen(0, '127.0.0.1', r));
const url = `http://127.0.0.1:${relay.address().port}/mcp`;

function run(cmd, args) {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '', stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60000);
    child.on('exit', (status) => { clearTimeout(timer); resolve({ status, stdout, stderr }); });
  });
}

let failed = 0;
try {
  for (const scenario of SCENARIOS) {
    // Asynchronous: the relay runs in this process's event loop.
    const r = await run(process.execPath, [path.join(here, 'node_modules/@modelcontextprotocol/conformance/dist/index.js'),
      'server', '--url', url, '--scenario', scenario, '-o', path.join(dir, 'conformance', scenario)]);
    const ok = r.status === 0;
    failed += ok ? 0 : 1;
    console.log(`${ok ? 'ok' : 'not ok'} - conformance ${scenario}`);
    if (!ok) console.log(r.stdout + r.stderr);
  }
} finally {
  relay.close();
  await stopServer(srv.child);
}
assert.equal(failed, 0, `${failed} conformance scenarios failed`);
