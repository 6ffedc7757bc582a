// The real Claude Code CLI (npm @anthropic-ai/claude-code) registers every Claude Code example
// config and `claude mcp list` must report causeway connected: over stdio, and over HTTPS with
// the bearer header and the certificate the server made for itself, trusted through its local
// CA (NODE_EXTRA_CA_CERTS=mcp-ca.pem). Two clients: the version npm installs on Node 20
// (2.1.197; later ones need Node >= 22) and a current one installed with Node 22 (the `node`
// package of tests/e2e). 2.1.197 refused the server's former self-signed certificate
// ("unable to verify the first certificate"). HOME is a fresh folder (no login, no network
// needed: `mcp list` only health-checks the servers). Controls: a wrong token and a missing CA
// must be reported as failures, so the check can fail; the token must not land in
// ~/.claude.json (the example keeps `${CAUSEWAY_MCP_TOKEN}` unexpanded).
//
// The CLI is ~380 MB, so it is not in package.json: it is installed on demand into
// $CAUSEWAY_E2E_CACHE (default ~/.cache/causeway-e2e). When it cannot be had (no registry,
// no Node of that major), the test is skipped with the reason.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { env, tempDir, makeFixture } from './lib/common.mjs';
import { makeToken, startServer, stopServer } from './lib/server.mjs';

const bin = env('CAUSEWAY_BIN');
const examples = path.join(env('CAUSEWAY_SOURCE_DIR'), 'examples', 'claude-code');
const here = path.dirname(new URL(import.meta.url).pathname);

// Each client: the Claude Code version and the Node whose npm installs and runs it.
function nodeOf(major) {
  for (const candidate of [path.join(here, 'node_modules', '.bin', 'node'), 'node']) {
    const r = spawnSync(candidate, ['-p', 'process.versions.node'], { encoding: 'utf8' });
    if (r.status === 0 && r.stdout.trim().split('.')[0] === String(major)) {
      const which = spawnSync(candidate, ['-p', 'process.execPath'], { encoding: 'utf8' });
      return { node: which.stdout.trim(), version: r.stdout.trim() };
    }
  }
  return null;
}
const CLIENTS = [{ claude: '2.1.197', nodeMajor: 20 }, { claude: '2.1.331', nodeMajor: 22 }];

function findClaude({ claude: version, nodeMajor }) {
  const node = nodeOf(nodeMajor);
  if (!node) {
    console.error(`SKIP: no Node ${nodeMajor} (system node, or tests/e2e/node_modules/.bin/node from npm ci)`);
    process.exit(77);
  }
  const nodePath = `${path.dirname(node.node)}:${process.env.PATH}`;
  const cache = path.join(process.env.CAUSEWAY_E2E_CACHE || path.join(os.homedir(), '.cache', 'causeway-e2e'),
    `claude-code-${version}`);
  const claude = path.join(cache, 'node_modules', '.bin', 'claude');
  if (!fs.existsSync(claude)) {
    fs.mkdirSync(cache, { recursive: true });
    const npm = spawnSync('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error', '--prefix', cache,
      `@anthropic-ai/claude-code@${version}`], { encoding: 'utf8', timeout: 240000, env: { ...process.env, PATH: nodePath } });
    if (npm.status !== 0 || !fs.existsSync(claude)) {
      console.error(`SKIP: cannot install @anthropic-ai/claude-code@${version} with npm on Node ${node.version}: ${(npm.stderr || npm.error || '').toString().trim().slice(0, 300)}`);
      process.exit(77);
    }
  }
  return { claude, nodePath, label: `claude ${version} (Node ${node.version})` };
}

const dir = tempDir();
const db = makeFixture(dir);
const home = path.join(dir, 'home');
const project = path.join(dir, 'project');
const binDir = path.join(dir, 'bin');
for (const d of [home, project, binDir]) fs.mkdirSync(d, { recursive: true });
// The configs run `causeway` from PATH, as an installed binary would be.
fs.symlinkSync(bin, path.join(binDir, 'causeway'));
let claude;
let baseEnv;
function cli(args, extraEnv = {}) {
  const r = spawnSync(claude, args, { cwd: project, env: { ...baseEnv, ...extraEnv }, encoding: 'utf8', timeout: 90000 });
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}
// `claude mcp add …` line as a shell would split it: single quotes keep `${…}` as written.
function words(line) {
  return [...line.matchAll(/'([^']*)'|"([^"]*)"|(\S+)/g)].map((m) => m[1] ?? m[2] ?? m[3]);
}
function listLine(extraEnv = {}) {
  const r = cli(['mcp', 'list'], extraEnv);
  const line = r.out.split('\n').find((l) => l.startsWith('causeway:'));
  assert.ok(line, `claude mcp list shows causeway:\n${r.out}`);
  return line;
}
function register(args, extraEnv = {}) {
  cli(['mcp', 'remove', 'causeway'], extraEnv);
  const r = cli(args, extraEnv);
  assert.equal(r.status, 0, `claude ${args.join(' ')}: ${r.out}`);
}

const addLines = fs.readFileSync(path.join(examples, 'claude-mcp-add.txt'), 'utf8').trim().split('\n');
const stdioLine = addLines.find((l) => l.includes(' -- '));
const httpLine = addLines.find((l) => l.includes('--transport http'));
const stdioJson = JSON.parse(fs.readFileSync(path.join(examples, '.mcp.json'), 'utf8')).mcpServers.causeway;
const httpJson = JSON.parse(fs.readFileSync(path.join(examples, 'https.mcp.json'), 'utf8')).mcpServers.causeway;
const claudeJson = path.join(home, '.claude.json');

// HTTPS: the server started as examples/README.md says (no --tls-cert: it makes its local CA
// and a certificate for 127.0.0.1), on a free port.
const { token, file: tokenFile } = makeToken(dir);
const state = path.join(dir, 'state');
const srv = await startServer(bin, ['mcp', '--db', db, '--http', '127.0.0.1:0', '--state-dir', state, '--token-file', tokenFile]);
const ca = path.join(state, 'mcp-ca.pem');
assert.ok(fs.existsSync(ca), `the server made its local CA: ${srv.stderr()}`);
try {
  for (const client of CLIENTS) {
    const found = findClaude(client);
    claude = found.claude;
    baseEnv = { ...process.env, HOME: home, XDG_CONFIG_HOME: path.join(home, '.config'), PATH: `${binDir}:${found.nodePath}`,
      CAUSEWAY_DB: db, DISABLE_AUTOUPDATER: '1', DISABLE_TELEMETRY: '1', CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1' };
    delete baseEnv.ANTHROPIC_API_KEY;
    delete baseEnv.NODE_EXTRA_CA_CERTS;
    const version = cli(['--version']).out.trim();

    // stdio: the `claude mcp add` line and the .mcp.json entry.
    register(words(stdioLine).slice(1));
    let line = listLine();
    assert.match(line, /✔ Connected/, line);
    console.log(`ok - ${found.label} [${version}]: ${stdioLine} -> ${line}`);
    register(['mcp', 'add-json', 'causeway', JSON.stringify(stdioJson)]);
    line = listLine();
    assert.match(line, /✔ Connected/, line);
    console.log(`ok - ${found.label}: .mcp.json (stdio) -> ${line}`);

    const withPort = (s) => s.replace('127.0.0.1:8443', `127.0.0.1:${srv.port}`);
    const trusted = { NODE_EXTRA_CA_CERTS: ca, CAUSEWAY_MCP_TOKEN: token };
    register(words(withPort(httpLine)).slice(1), trusted);
    assert.ok(!fs.readFileSync(claudeJson, 'utf8').includes(token), 'claude mcp add stored the token itself, not ${CAUSEWAY_MCP_TOKEN}');
    line = listLine(trusted);
    assert.match(line, /✔ Connected/, line);
    console.log(`ok - ${found.label}: ${httpLine} (bearer header, generated CA) -> ${line}`);
    // Without the CA the certificate is refused.
    line = listLine({ CAUSEWAY_MCP_TOKEN: token });
    assert.doesNotMatch(line, /✔ Connected/, line);
    console.log(`ok - ${found.label} without the CA: ${line.slice(0, 120)}`);

    const entry = JSON.parse(withPort(JSON.stringify(httpJson)));
    register(['mcp', 'add-json', 'causeway', JSON.stringify(entry)], trusted);
    line = listLine(trusted);
    assert.match(line, /✔ Connected/, line);
    console.log(`ok - ${found.label}: https.mcp.json -> ${line}`);
    // A wrong token is refused (401), and the CLI says so.
    entry.headers.Authorization = `Bearer ${'0'.repeat(64)}`;
    register(['mcp', 'add-json', 'causeway', JSON.stringify(entry)], trusted);
    const before = (srv.stderr().match(/"status":401/g) || []).length;
    line = listLine(trusted);
    assert.doesNotMatch(line, /✔ Connected/, line);
    // 2.1.331 prints the status; 2.1.197 only "Failed to connect": the server's audit says 401.
    // (spawnSync blocked the event loop: let the server's stderr come in first.)
    await new Promise((resolve) => setTimeout(resolve, 300));
    if (!/401/.test(line)) assert.ok((srv.stderr().match(/"status":401/g) || []).length > before, `no 401 for the wrong token: ${line}`);
    console.log(`ok - ${found.label} with a wrong token (401): ${line.slice(0, 120)}`);
    cli(['mcp', 'remove', 'causeway']);
  }
} finally {
  await stopServer(srv.child);
}
