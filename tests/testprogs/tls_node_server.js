// An HTTPS server on Node's own TLS (OpenSSL linked into the node executable, no libssl.so
// mapped): causeway counts its TLS connections and does not read them (docs/INFERENCE.md
// "TLS"). Usage: node tls_node_server.js PORT CERT KEY READY_FILE
'use strict';
const fs = require('fs');
const https = require('https');
const [port, cert, key, ready] = process.argv.slice(2);
https
  .createServer({cert: fs.readFileSync(cert), key: fs.readFileSync(key)}, (req, res) => {
    res.writeHead(200, {'Content-Type': 'text/plain'});
    res.end('x'.repeat(300));
  })
  .listen(Number(port), '127.0.0.1', () => fs.writeFileSync(ready, ''));
