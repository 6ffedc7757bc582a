// Every client config in examples/ works: stdio configs are started from their command line
// (command + args, `claude mcp add … -- <command line>`), HTTPS configs are used with their
// URL and headers against a server started the way examples/README.md says.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { env, tempDir, makeFixture, EXPECTED_TOOLS } from './lib/common.mjs';
import { makeCert, makeToken, startServer, stopServer, fetchWithCa } from './lib/server.mjs';

const bin = env('CAUSEWAY_BIN');
const examples = path.join(env('CAUSEWAY_SOURCE_DIR'), 'examples');
const dir = tempDir();
const db = makeFixture(dir);
const { cert, key, ca } = makeCert(dir);
const { token, file: tokenFile } = makeToken(dir);
const vars = { CAUSEWAY_MCP_TOKEN: token, 'env:CAUSEWAY_MCP_TOKEN': token };
const expand = (s) => s.replace(/\$\{([^}]+)\}/g, (_, name) => {
  assert.ok(name in vars, `unknown variable ${name}`);
  return vars[name];
});
const readServer = (file) => JSON.parse(fs.readFileSync(path.join(examples, file), 'utf8')).mcpServers.causeway;

async function checkClient(client, label) {
  const { tools } = await client.listTools();
  assert.equal(tools.length, EXPECTED_TOOLS.length, label);
  const r = await client.callTool({ name: 'get_trace_stats', arguments: { top_n: 1 } });
  assert.equal(r.isError, false, `${label}: ${r.content[0].text}`);
  await client.close();
  console.log(`ok - ${label}`);
}

async function viaStdio(command, args, label) {
  assert.equal(command, 'causeway', `${label}: the config runs the causeway binary`);
  const transport = new StdioClientTransport({ command: bin, args, env: { ...process.env, CAUSEWAY_DB: db }, stderr: 'pipe' });
  const client = new Client({ name: 'examples', version: '1' });
  await client.connect(transport);
  await checkClient(client, label);
}

for (const file of ['claude-code/.mcp.json', 'cursor/mcp.json', 'ollmcp/servers.json']) {
  const s = readServer(file);
  await viaStdio(s.command, s.args, `${file} (stdio)`);
}
const addLines = fs.readFileSync(path.join(examples, 'claude-code/claude-mcp-add.txt'), 'utf8').trim().split('\n');
const stdioLine = addLines.find((l) => l.includes(' -- '));
const argv = stdioLine.split(' -- ')[1].trim().split(/\s+/);
await viaStdio(argv[0], argv.slice(1), 'claude mcp add (stdio)');

// HTTPS: the server as examples/README.md starts it, on a free port instead of 8443.
const srv = await startServer(bin, ['mcp', '--db', db, '--http', '127.0.0.1:0', '--tls-cert', cert, '--tls-key', key,
  '--token-file', tokenFile]);
try {
  const httpConfigs = [
    ['claude-code/https.mcp.json', readServer('claude-code/https.mcp.json')],
    ['cursor/https.mcp.json', readServer('cursor/https.mcp.json')],
    ['ollmcp/https.servers.json', readServer('ollmcp/https.servers.json')],
  ];
  const httpLine = addLines.find((l) => l.includes('--transport http'));
  // Single quotes: the shell leaves ${CAUSEWAY_MCP_TOKEN} for the client to expand.
  const m = httpLine.match(/(https:\/\/\S+)\s+--header\s+'([^:]+):\s*([^']*\$\{[A-Z_]+\})'/);
  httpConfigs.push(['claude mcp add (https)', { url: m[1], headers: { [m[2]]: m[3] } }]);
  for (const [label, s] of httpConfigs) {
    const url = new URL(s.url);
    assert.equal(url.pathname, '/mcp');
    url.port = String(srv.port);
    const headers = Object.fromEntries(Object.entries(s.headers).map(([k, v]) => [k, expand(v)]));
    const client = new Client({ name: 'examples', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers }, fetch: fetchWithCa(ca) }));
    await checkClient(client, `${label} (https)`);
  }
} finally {
  await stopServer(srv.child);
}
