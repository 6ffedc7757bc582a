// A fastify 5 server (npm) for the live request tests (tests/bpf/test_requests_node_bpf.cpp),
// plain or over TLS with Node's own (statically linked) OpenSSL. The routes every stack serves
// (tests/servers/README.md):
//   GET  /hello                 "hello"
//   GET  /metrics               one Prometheus sample (causeway's scraper reads it)
//   GET  /spin?ms=N             N ms of CPU time on the event loop, then "spun" (a hog on its CPU slows it)
//   POST /v1/chat/completions   OpenAI-compatible: stream=true → SSE chunks then [DONE]; else JSON
//   GET  /boom                  500
//   GET  /abort                 SSE head and two events, then the socket destroyed (no final chunk)
//   GET  /slow-stream           an SSE event every 50 ms for 10 s (a client leaves mid-stream)
// Unknown paths answer fastify's own 404.
// Usage: node fastify_server.js PORT READY_FILE [--tls CERT KEY]
'use strict';
const fs = require('fs');
const Fastify = require('fastify');

const [port, readyFile, tlsFlag, cert, key] = process.argv.slice(2);
const https = tlsFlag === '--tls' ? { cert: fs.readFileSync(cert), key: fs.readFileSync(key) } : null;
const app = Fastify({ logger: false, keepAliveTimeout: 1000, ...(https ? { https } : {}) });

// N ms of CPU time (not of wall time: a server preempted meanwhile takes longer, as a real
// request's work would).
function spin(ms) {
  const cpu = () => { const u = process.cpuUsage(); return u.user + u.system; };
  const until = cpu() + ms * 1000;
  while (cpu() < until);
}

function chunk(id, content, finish) {
  return 'data: ' + JSON.stringify({ id, object: 'chat.completion.chunk', created: 0, model: 'stack-test',
    choices: [{ index: 0, delta: content === null ? {} : { content }, finish_reason: finish }] }) + '\n\n';
}

app.get('/hello', async () => 'hello');
app.get('/metrics', async (req, reply) => reply.type('text/plain').send('demo_requests_total 1\n'));
app.get('/spin', async (req) => {
  spin(Number(req.query.ms || 2));
  return 'spun';
});
app.get('/boom', async (req, reply) => reply.code(500).send('boom'));

app.post('/v1/chat/completions', (req, reply) => {
  const body = req.body || {};
  const id = 'chatcmpl-' + (req.headers['x-request-id'] || 'x');
  const words = ['one', ' two', ' three', ' four', ' five'];
  if (!body.stream) {
    reply.send({ id, object: 'chat.completion', model: 'stack-test',
      choices: [{ index: 0, message: { role: 'assistant', content: words.join('') }, finish_reason: 'stop' }],
      usage: { prompt_tokens: 3, completion_tokens: words.length, total_tokens: 3 + words.length } });
    return;
  }
  reply.hijack();
  const res = reply.raw;
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  let i = 0;
  const timer = setInterval(() => {
    if (i < words.length) res.write(chunk(id, words[i++], null));
    else {
      clearInterval(timer);
      res.write(chunk(id, null, 'stop'));
      res.end('data: [DONE]\n\n');
    }
  }, 5);
  res.on('close', () => clearInterval(timer));
});

function sse(reply) {
  reply.hijack();
  reply.raw.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  return reply.raw;
}

app.get('/abort', (req, reply) => {
  const res = sse(reply);
  res.write(chunk('abort', 'a', null));
  res.write(chunk('abort', 'b', null));
  setTimeout(() => res.socket.destroy(), 50);  // gives up: no terminating chunk
});

app.get('/slow-stream', (req, reply) => {
  const res = sse(reply);
  let i = 0;
  const timer = setInterval(() => {
    if (++i > 200) {
      clearInterval(timer);
      res.end('data: [DONE]\n\n');
    } else res.write(chunk('slow', 'x', null));
  }, 50);
  res.on('close', () => clearInterval(timer));
});

app.listen({ port: Number(port), host: '127.0.0.1', backlog: 4096 }).then(() => {
  fs.writeFileSync(readyFile, String(process.pid));
});
process.on('SIGTERM', () => app.close().then(() => process.exit(0)));
