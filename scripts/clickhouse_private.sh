#!/usr/bin/env bash
# A private ClickHouse server for the fleet tests and bench: its own folder, loopback ports,
# the users of examples/clickhouse/users.xml (causeway_writer, causeway_reader) with the
# passwords given. Starts it in the background (again, on the same folder, after a kill) and
# waits until its HTTP port answers; prints the server's pid.
#
#   scripts/clickhouse_private.sh DIR HTTP_PORT TCP_PORT WRITER_PASSWORD READER_PASSWORD [READER_DATABASES]
#
# READER_DATABASES: absent, the reader is the example's (the `causeway` database only); "any"
# drops its <allow_databases> (a shared test server where each test reads its own database).
#
# Exit 77 when clickhouse-server is not installed and cannot be (the tests skip then).
set -euo pipefail
dir=$1 http=$2 tcp=$3 wpw=$4 rpw=$5 reader_databases=${6:-}
here=$(cd "$(dirname "$0")/.." && pwd)

server=$(command -v clickhouse-server || true)
if [[ -z $server && $(id -u) == 0 ]] && command -v apt-get > /dev/null; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q clickhouse-server > "$dir/apt.log" 2>&1 ||
    { DEBIAN_FRONTEND=noninteractive apt-get update -q > /dev/null 2>&1 &&
      DEBIAN_FRONTEND=noninteractive apt-get install -y -q clickhouse-server >> "$dir/apt.log" 2>&1; } || true
  server=$(command -v clickhouse-server || true)
fi
if [[ -z $server ]]; then
  echo "clickhouse-server is not installed and could not be (apt-get install clickhouse-server)" >&2
  exit 77
fi

mkdir -p "$dir/data" "$dir/tmp" "$dir/user_files" "$dir/format_schemas"
cat > "$dir/config.xml" <<XML
<?xml version="1.0"?>
<yandex>
  <logger><level>warning</level><log>$dir/server.log</log><errorlog>$dir/server.err.log</errorlog><size>10M</size><count>1</count></logger>
  <http_port>$http</http_port>
  <tcp_port>$tcp</tcp_port>
  <listen_host>127.0.0.1</listen_host>
  <path>$dir/data/</path>
  <tmp_path>$dir/tmp/</tmp_path>
  <user_files_path>$dir/user_files/</user_files_path>
  <format_schema_path>$dir/format_schemas/</format_schema_path>
  <users_config>$dir/users.xml</users_config>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
  <mark_cache_size>67108864</mark_cache_size>
  <uncompressed_cache_size>67108864</uncompressed_cache_size>
  <max_concurrent_queries>20</max_concurrent_queries>
</yandex>
XML
sha() { printf %s "$1" | sha256sum | cut -d' ' -f1; }
any_database=()
[[ $reader_databases == any ]] && any_database=(-e '/<allow_databases>/,/<\/allow_databases>/d')
sed -e "s/WRITER_SHA256/$(sha "$wpw")/" -e "s/READER_SHA256/$(sha "$rpw")/" "${any_database[@]}" \
  "$here/examples/clickhouse/users.xml" > "$dir/users.xml"

"$server" --config-file="$dir/config.xml" < /dev/null > "$dir/stdout.log" 2>&1 &
pid=$!
for _ in $(seq 1 300); do
  if ! kill -0 "$pid" 2> /dev/null; then
    echo "clickhouse-server exited at start:" >&2
    tail -n 5 "$dir/server.err.log" "$dir/stdout.log" >&2 || true
    exit 1
  fi
  if (exec 3<> "/dev/tcp/127.0.0.1/$http") 2> /dev/null; then
    echo "$pid"
    exit 0
  fi
  sleep 0.1
done
echo "clickhouse-server did not open port $http within 30 s" >&2
kill "$pid" || true
exit 1
