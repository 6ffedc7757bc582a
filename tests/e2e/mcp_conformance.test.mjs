// The official MCP conformance suite (npm @modelcontextprotocol/conformance, Node 22) against
// `causeway mcp --http`, in both protocol eras on one endpoint: the server scenarios that need
// no fixture tools of the suite's own reference server. The few checks inside them that only
// those fixture tools can exercise are listed in conformance-baseline.yaml; the suite must
// call each of them "Not testable", and every other check must pass. (The suite drives HTTP
// servers only; the stdio transport's modern era is covered by mcp_stdio.test.mjs.) The suite cannot send a bearer token or trust a test CA, so a loopback
// relay adds the Authorization header and forwards every other header (Host and Origin
// included, for the DNS-rebinding scenario) to the TLS server unchanged.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import tls from 'node:tls';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Agent, request } from 'undici';
import { env, tempDir, makeFixture } from './lib/common.mjs';
import { makeCert, makeToken, startServer, stopServer } from './lib/server.mjs';

// The generic scenarios of each era: those that need none of the suite's own fixture tools,
// prompts or resources. Each era runs at its own wire version (stateful initialize through
// 2025-11-25, stateless per-request _meta in 2026-07-28) on the same endpoint.
const ERAS = {
  '2025-11-25': ['server-initialize', 'ping', 'logging-set-level', 'tools-list', 'prompts-list', 'resources-list',
    'dns-rebinding-protection'],
  '2026-07-28': ['server-stateless', 'tools-list', 'prompts-list', 'resources-list', 'dns-rebinding-protection',
    'caching', 'http-header-validation', 'sep-2164-resource-not-found'],
};

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

const BASELINE = path.join(here, 'conformance-baseline.yaml');
const baselined = new Set(fs.readFileSync(BASELINE, 'utf8').split('\n').map((l) => l.match(/^\s+- (\S+)$/)?.[1]).filter(Boolean));

function checksOf(out) {
  const found = [];
  const walk = (d) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name === 'checks.json') found.push(...JSON.parse(fs.readFileSync(p, 'utf8')));
    }
  };
  if (fs.existsSync(out)) walk(out);
  return found;
}

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
  for (const [era, scenarios] of Object.entries(ERAS)) {
    for (const scenario of scenarios) {
      // Asynchronous: the relay runs in this process's event loop.
      const out = path.join(dir, 'conformance', era, scenario);
      const r = await run(process.execPath, [path.join(here, 'node_modules/@modelcontextprotocol/conformance/dist/index.js'),
        'server', '--url', url, '--scenario', scenario, '--spec-version', era, '--expected-failures', BASELINE, '-o', out]);
      // The baseline may only excuse checks the suite itself calls untestable here.
      const excused = checksOf(out).filter((c) => c.status !== 'SUCCESS' && c.status !== 'SKIPPED' && c.status !== 'INFO');
      const wrong = excused.filter((c) => !String(c.errorMessage).startsWith('Not testable:') ||
        !baselined.has(`${scenario}:${c.id}`));
      const ok = r.status === 0 && wrong.length === 0;
      if (excused.length) console.log(`# ${era} ${scenario}: ${excused.length - wrong.length} untestable checks excused by the baseline`);
      for (const c of wrong) console.log(`# ${c.status} ${c.id}: ${c.errorMessage}`);
      failed += ok ? 0 : 1;
      console.log(`${ok ? 'ok' : 'not ok'} - conformance ${era} ${scenario}`);
      if (!ok || process.env.CONFORMANCE_VERBOSE) console.log(r.stdout + r.stderr);
    }
  }
} finally {
  relay.close();
  await stopServer(srv.child);
}
assert.equal(failed, 0, `${failed} conformance scenarios failed`);
