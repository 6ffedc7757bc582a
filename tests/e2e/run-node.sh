#!/bin/sh
# Runs one e2e script with the Node from node_modules (node@22, pinned in package.json), or
# the system Node. Exit 77 (CTest "skipped") with the reason when the npm packages are missing.
here=$(cd "$(dirname "$0")" && pwd)
if [ ! -d "$here/node_modules/@modelcontextprotocol/sdk" ]; then
  echo "SKIP: tests/e2e/node_modules is missing; run: npm ci --prefix tests/e2e" >&2
  exit 77
fi
node="$here/node_modules/.bin/node"
[ -x "$node" ] || node=$(command -v node)
if [ -z "$node" ]; then
  echo "SKIP: no node binary (install Node >= 20 or run npm ci --prefix tests/e2e)" >&2
  exit 77
fi
exec "$node" "$@"
