// The official `openai` npm SDK as a streaming client (tests/bpf/test_requests_node_bpf.cpp and
// the other stacks' tests): chat.completions.create({stream: true}) against the test servers'
// OpenAI-compatible route, each request with its own x-request-id. One JSON line per request:
// its id, the status (200, or the SDK's error status; -1 without one) and the content chunks
// the SDK handed over. Over TLS the server's certificate is trusted through NODE_EXTRA_CA_CERTS.
// Usage: node openai_client.js --port P --requests N [--concurrency C] [--tls] --out FILE
'use strict';
const fs = require('fs');
const OpenAI = require('openai');

const args = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : dflt;
};
const port = Number(opt('--port'));
const total = Number(opt('--requests', '10'));
const concurrency = Number(opt('--concurrency', '4'));
const out = opt('--out');
const scheme = args.includes('--tls') ? 'https' : 'http';
const client = new OpenAI({ apiKey: 'test-key', baseURL: `${scheme}://127.0.0.1:${port}/v1`, maxRetries: 0, timeout: 30000 });

async function one(i) {
  const id = `sdk-${i}`;
  try {
    const stream = await client.chat.completions.create(
      { model: 'stack-test', messages: [{ role: 'user', content: 'count to five' }], stream: true, max_tokens: 5 },
      { headers: { 'x-request-id': id } });
    let chunks = 0;
    for await (const c of stream) if (c.choices[0] && c.choices[0].delta && c.choices[0].delta.content) ++chunks;
    return { request_id: id, status: 200, chunks };
  } catch (e) {
    return { request_id: id, status: typeof e.status === 'number' ? e.status : -1, chunks: 0, error: String(e) };
  }
}

(async () => {
  const results = [];
  let next = 0;
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < total) results.push(await one(next++));
  }));
  fs.writeFileSync(out, results.map((r) => JSON.stringify(r)).join('\n') + '\n');
  process.exit(results.every((r) => r.status === 200) ? 0 : 1);
})();
