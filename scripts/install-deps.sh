#!/usr/bin/env bash
# Installs the Debian packages causeway builds with; with --tests also what the tests use.
# Needs root (or sudo).
#   scripts/install-deps.sh            # build the `causeway` binary (the main job)
#   scripts/install-deps.sh --tests    # plus every test tier's tools
set -euo pipefail
packages=(cmake ninja-build g++ clang llvm pkg-config libbpf-dev bpftool libelf-dev libdw-dev zlib1g-dev
          libsqlite3-dev libssl-dev nlohmann-json3-dev libcpp-httplib-dev doctest-dev libcli11-dev liblzma-dev)
if [[ ${1:-} == --tests ]]; then
  # sqlite3/openssl CLIs (fixtures, test certificates), sanitizer runtimes, unshare/runuser,
  # CPython for the live Python tests, nftables for packet loss in a network namespace,
  # aiohttp for the streaming inference server of the live request tests; Chromium to load
  # `causeway report` pages headless (tests/e2e/report_browser.py); Prometheus scraping two
  # tracers (tests/bpf/test_prometheus_fleet.cpp); ClickHouse as the fleet store
  # (tests/e2e fleet tests, a private server: scripts/clickhouse_private.sh).
  packages+=(sqlite3 openssl libclang-rt-14-dev util-linux python3 python3-aiohttp python3-setproctitle nftables chromium prometheus
             clickhouse-server)
  # Go's net/http (a static server with no libc) and uvicorn (an ASGI server) for the live
  # request tests of several stacks.
  packages+=(golang-go python3-uvicorn)
  # A node/npm already on PATH (Debian's or not) is fine for the e2e tests' MCP client.
  command -v node >/dev/null && command -v npm >/dev/null || packages+=(nodejs npm)
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  echo "installing: ${missing[*]}" >&2
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
