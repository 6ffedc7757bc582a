// An Express server for the live request tests (tests/bpf/test_requests_node_bpf.cpp): Node's
// libuv accepts with accept4(fd, NULL, NULL), so a client's address is only in the kernel socket.
// GET /hello answers "hello"; GET /metrics one Prometheus sample (causeway's scraper reads it).
// It starts one child that makes no CUDA call, as an API server starts its engine core: the
// trace must still record it (its `processes` row, parent the server).
// Usage: node express_server.js PORT READY_FILE
'use strict';
const fs = require('fs');
const { spawn } = require('child_process');
const express = require('express');

const [port, readyFile] = process.argv.slice(2);
const engine = spawn('sleep', ['600'], { stdio: 'ignore' });
const app = express();
app.get('/hello', (req, res) => res.type('text/plain').send('hello'));
app.get('/metrics', (req, res) => res.type('text/plain').send('demo_requests_total 1\n'));
const server = app.listen(Number(port), '127.0.0.1', 4096, () => fs.writeFileSync(readyFile, String(process.pid)));
server.keepAliveTimeout = 1000;
process.on('SIGTERM', () => {
  engine.kill('SIGKILL');
  server.close(() => process.exit(0));
});
