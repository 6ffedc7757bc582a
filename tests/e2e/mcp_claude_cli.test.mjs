// The real Claude Code CLI (npm @anthropic-ai/claude-code) registers every Claude Code example
// config and `claude mcp list` must report causeway connected: over stdio, and over HTTPS with
// the bearer header and the test CA (NODE_EXTRA_CA_CERTS). HOME is a fresh folder (no login,
// no network needed: `mcp list` only health-checks the servers). Controls: a wrong token and a
// missing CA must be reported as failures, so the check can fail.
//
// The CLI is ~380 MB, so it is not in package.json: it is installed on demand into
// $CAUSEWAY_E2E_CACHE (default ~/.cache/causeway-e2e), or taken from $CLAUDE_BIN. When it
// cannot be had (no registry), the test is skipped with the reason.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { env, tempDir, makeFixture } from './lib/common.mjs';
import { makeCert, makeToken, startServer, stopServer } from './lib/server.mjs';

const CLAUDE_VERSION = '2.1.331';
const bin = env('CAUSEWAY_BIN');
const examples = path.join(env('CAUSEWAY_SOURCE_DIR'), 'examples', 'claude-code');

function findClaude() {
  if (process.env.CLAUDE_BIN) return process.env.CLAUDE_BIN;
  const cache = path.join(process.env.CAUSEWAY_E2E_CACHE || path.join(os.homedir(), '.cache', 'causeway-e2e'),
    `claude-code-${CLAUDE_VERSION}`);
  const claude = path.join(cache, 'node_modules', '.bin', 'claude');
  if (fs.existsSync(claude)) return claude;
  fs.mkdirSync(cache, { recursive: true });
  const npm = spawnSync('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error', '--prefix', cache,
    `@anthropic-ai/claude-code@${CLAUDE_VERSION}`], { encoding: 'utf8', timeout: 240000 });
  if (npm.status !== 0 || !fs.existsSync(claude)) {
    console.error(`SKIP: cannot install @anthropic-ai/claude-code@${CLAUDE_VERSION} with npm: ${(npm.stderr || npm.error || '').toString().trim().slice(0, 300)}`);
    process.exit(77);
  }
  return claude;
}

const claude = findClaude();
const dir = tempDir();
const db = makeFixture(dir);
const home = path.join(dir, 'home');
const project = path.join(dir, 'project');
const binDir = path.join(dir, 'bin');
for (const d of [home, project, binDir]) fs.mkdirSync(d, { recursive: true });
// The configs run `causeway` from PATH, as an installed binary would be.
fs.symlinkSync(bin, path.join(binDir, 'causeway'));
const baseEnv = { ...process.env, HOME: home, XDG_CONFIG_HOME: path.join(home, '.config'), PATH: `${binDir}:${process.env.PATH}`,
  CAUSEWAY_DB: db, DISABLE_AUTOUPDATER: '1', DISABLE_TELEMETRY: '1', CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1' };
delete baseEnv.ANTHROPIC_API_KEY;

function cli(args, extraEnv = {}) {
  const r = spawnSync(claude, args, { cwd: project, env: { ...baseEnv, ...extraEnv }, encoding: 'utf8', timeout: 90000 });
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}
// `claude mcp add …` line as a shell would split it (double quotes only, as in the examples).
function words(line) {
  return [...line.matchAll(/"([^"]*)"|(\S+)/g)].map((m) => (m[1] !== undefined ? m[1] : m[2]));
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
const version = cli(['--version']).out.trim();

// stdio: the `claude mcp add` line and the .mcp.json entry.
register(words(stdioLine).slice(1));
let line = listLine();
assert.match(line, /✔ Connected/, line);
console.log(`ok - claude ${version}: ${stdioLine} -> ${line}`);
register(['mcp', 'add-json', 'causeway', JSON.stringify(stdioJson)]);
line = listLine();
assert.match(line, /✔ Connected/, line);
console.log(`ok - claude: .mcp.json (stdio) -> ${line}`);

// HTTPS: the server started as examples/README.md says, on a free port.
const { cert, key } = makeCert(dir);
const { token, file: tokenFile } = makeToken(dir);
const srv = await startServer(bin, ['mcp', '--db', db, '--http', '127.0.0.1:0', '--tls-cert', cert, '--tls-key', key,
  '--token-file', tokenFile]);
try {
  const withPort = (s) => s.replace('127.0.0.1:8443', `127.0.0.1:${srv.port}`).replace('${CAUSEWAY_MCP_TOKEN}', token);
  const trusted = { NODE_EXTRA_CA_CERTS: cert, CAUSEWAY_MCP_TOKEN: token };
  register(words(withPort(httpLine)).slice(1), trusted);
  line = listLine(trusted);
  assert.match(line, /✔ Connected/, line);
  console.log(`ok - claude: ${httpLine} (bearer header, test CA) -> ${line}`);
  // Without the CA the certificate is refused.
  line = listLine({ NODE_EXTRA_CA_CERTS: '' });
  assert.doesNotMatch(line, /✔ Connected/, line);
  console.log(`ok - claude without the test CA: ${line.slice(0, 120)}`);

  const entry = JSON.parse(withPort(JSON.stringify(httpJson)));
  register(['mcp', 'add-json', 'causeway', JSON.stringify(entry)], trusted);
  line = listLine(trusted);
  assert.match(line, /✔ Connected/, line);
  console.log(`ok - claude: https.mcp.json -> ${line}`);
  // A wrong token is refused (401), and the CLI says so.
  entry.headers.Authorization = `Bearer ${'0'.repeat(64)}`;
  register(['mcp', 'add-json', 'causeway', JSON.stringify(entry)], trusted);
  line = listLine(trusted);
  assert.doesNotMatch(line, /✔ Connected/, line);
  assert.match(line, /401/, line);
  console.log(`ok - claude with a wrong token: ${line.slice(0, 120)}`);
} finally {
  await stopServer(srv.child);
}
