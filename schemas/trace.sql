-- causeway trace DB schema.
--
-- Migrations are applied in order by the writer only; each section starts with
-- "-- @migration N" and brings the DB to PRAGMA user_version = N. Never edit a released
-- migration: add a new one. Readers refuse a DB whose user_version is newer than theirs.
--
-- Conventions: every timestamp is Unix nanoseconds (UTC); durations are nanoseconds in
-- tables and microseconds (…_us) in views. Strings that came from traced processes (comm,
-- cmdline, exe, frames) are untrusted data.

-- @migration 1
CREATE TABLE sessions (
  id              INTEGER PRIMARY KEY,
  source_kind     TEXT    NOT NULL CHECK (source_kind IN ('live', 'demo', 'import')),
  label           TEXT,              -- demo scenario, imported file name, or trace arguments
  host            TEXT,
  kernel          TEXT,
  gpus            TEXT,
  driver_version  TEXT,
  cuda_version    TEXT,
  tool_version    TEXT    NOT NULL,
  started_ns      INTEGER NOT NULL,
  stopped_ns      INTEGER,           -- NULL while the session is being written
  rolled_up_to_ns INTEGER NOT NULL DEFAULT 0  -- rollups are complete for ts < this
);

-- Dictionary of operations. Ids below 10000 are fixed by bpf/events.h; imports add more.
CREATE TABLE ops (
  id        INTEGER PRIMARY KEY,
  source    TEXT NOT NULL,           -- cuda | driver | nccl | host | io | net | mem
  name      TEXT NOT NULL,
  kind      TEXT NOT NULL CHECK (kind IN ('call', 'event')),  -- call: has a duration
  arg_names TEXT NOT NULL DEFAULT '',  -- comma-separated meaning of a0..a5
  UNIQUE (source, name)
);

CREATE TABLE processes (
  session_id   INTEGER NOT NULL,
  pid          INTEGER NOT NULL,
  ppid         INTEGER,
  comm         TEXT,
  cmdline      TEXT,
  exe          TEXT,
  cgroup_id    INTEGER,
  container_id TEXT,
  first_ns     INTEGER,
  last_ns      INTEGER,
  exit_code    INTEGER,
  PRIMARY KEY (session_id, pid)
) WITHOUT ROWID;

CREATE TABLE threads (
  session_id INTEGER NOT NULL,
  tid        INTEGER NOT NULL,
  pid        INTEGER NOT NULL,
  comm       TEXT,
  PRIMARY KEY (session_id, tid)
) WITHOUT ROWID;

-- One row per traced call (on return, ts_ns = call start) or host event.
CREATE TABLE events (
  id         INTEGER PRIMARY KEY,
  session_id INTEGER NOT NULL,
  ts_ns      INTEGER NOT NULL,
  dur_ns     INTEGER NOT NULL DEFAULT 0,
  pid        INTEGER NOT NULL,
  tid        INTEGER NOT NULL,
  op_id      INTEGER NOT NULL,
  cpu        INTEGER,
  ret        INTEGER NOT NULL DEFAULT 0,  -- return code (0 = success)
  a0 INTEGER, a1 INTEGER, a2 INTEGER, a3 INTEGER, a4 INTEGER, a5 INTEGER,
  stack_id   INTEGER,
  cgroup_id  INTEGER
);

-- Zone map of `events`: one row per writer batch with its rowid range and ts range. Rows
-- arrive nearly in time order, so a window maps to a narrow id range; this replaces an index
-- on ts_ns, which would cost a second B-tree insert per event (~40% of the writer's rate).
CREATE TABLE event_blocks (
  session_id INTEGER NOT NULL,
  first_id   INTEGER NOT NULL,
  last_id    INTEGER NOT NULL,
  min_ts     INTEGER NOT NULL,
  max_ts     INTEGER NOT NULL,
  max_end_ns INTEGER NOT NULL,   -- max(ts_ns + dur_ns) in the block
  PRIMARY KEY (session_id, first_id)
) WITHOUT ROWID;

-- sched_switch records where prev or next is a thread of a traced process.
CREATE TABLE sched (
  id         INTEGER PRIMARY KEY,
  session_id INTEGER NOT NULL,
  ts_ns      INTEGER NOT NULL,
  cpu        INTEGER NOT NULL,
  prev_tid   INTEGER NOT NULL,
  prev_pid   INTEGER NOT NULL,
  prev_prio  INTEGER,
  prev_state INTEGER NOT NULL,   -- 0 = runnable (preempted), else TASK_* bits (1 S, 2 D, …)
  next_tid   INTEGER NOT NULL,
  next_pid   INTEGER NOT NULL,
  next_prio  INTEGER
);
CREATE INDEX sched_ts ON sched (ts_ns);

CREATE TABLE wakeups (
  id         INTEGER PRIMARY KEY,
  session_id INTEGER NOT NULL,
  ts_ns      INTEGER NOT NULL,
  tid        INTEGER NOT NULL,    -- the thread woken
  pid        INTEGER NOT NULL,
  waker_tid  INTEGER,
  waker_pid  INTEGER,
  target_cpu INTEGER
);
CREATE INDEX wakeups_ts ON wakeups (ts_ns);

-- Deduplicated user stacks; frames is a JSON array of strings, innermost first:
-- "module!symbol+0xoff" with " (file:line)" where debug info exists.
CREATE TABLE stacks (
  id     INTEGER PRIMARY KEY,
  hash   INTEGER NOT NULL UNIQUE,
  frames TEXT NOT NULL
);

-- Diagnosis results; doc holds the full chain document (docs/INTERFACES.md shape).
CREATE TABLE chains (
  id            TEXT PRIMARY KEY,
  session_id    INTEGER NOT NULL,
  created_ns    INTEGER NOT NULL,
  from_ns       INTEGER NOT NULL,
  to_ns         INTEGER NOT NULL,
  severity      TEXT NOT NULL CHECK (severity IN ('HIGH', 'MEDIUM', 'LOW')),
  cause         TEXT NOT NULL,
  pid           INTEGER,
  comm          TEXT,
  op            TEXT,
  calls         INTEGER,
  p50_us        REAL,
  p99_us        REAL,
  slow_share    REAL,
  culprit_pid   INTEGER,
  culprit_comm  TEXT,
  culprit_share REAL,
  summary       TEXT NOT NULL,
  doc           TEXT NOT NULL
);

-- Per (op, process, second) aggregates; hist is a sparse log-linear histogram of dur_ns
-- (tracedb/histogram.h) so percentiles over any window stay within 1% without raw rows.
-- A (session, op, pid, sec) may appear in more than one row when late events arrive;
-- readers sum them.
CREATE TABLE rollups (
  session_id INTEGER NOT NULL,
  op_id      INTEGER NOT NULL,
  pid        INTEGER NOT NULL,
  sec        INTEGER NOT NULL,    -- Unix seconds
  count      INTEGER NOT NULL,
  sum_ns     INTEGER NOT NULL,
  min_ns     INTEGER NOT NULL,
  max_ns     INTEGER NOT NULL,
  errors     INTEGER NOT NULL,
  hist       BLOB NOT NULL
);
CREATE INDEX rollups_sec ON rollups (sec);

-- Counters of the pipeline: events seen, written, dropped per reason.
CREATE TABLE collector_stats (
  session_id INTEGER NOT NULL,
  name       TEXT NOT NULL,
  value      INTEGER NOT NULL,
  updated_ns INTEGER NOT NULL,
  PRIMARY KEY (session_id, name)
) WITHOUT ROWID;

CREATE TABLE test_reports (
  id      INTEGER PRIMARY KEY,
  ts_ns   INTEGER NOT NULL,
  host    TEXT,
  ok      INTEGER NOT NULL,
  summary TEXT NOT NULL,
  doc     TEXT NOT NULL
);

-- @migration 2
-- Human- and LLM-facing layer: column documentation and readable views (µs units).
CREATE TABLE schema_docs (
  object      TEXT NOT NULL,   -- table or view
  column_name TEXT NOT NULL,   -- '' documents the object itself
  unit        TEXT NOT NULL DEFAULT '',
  description TEXT NOT NULL,
  PRIMARY KEY (object, column_name)
) WITHOUT ROWID;

CREATE VIEW v_calls AS
SELECT e.session_id, e.ts_ns, e.ts_ns + e.dur_ns AS end_ns, o.source, o.name AS op,
       e.pid, e.tid, p.comm, e.cpu, e.dur_ns / 1000.0 AS dur_us, e.ret, (e.ret != 0) AS is_error,
       e.a0, e.a1, e.a2, e.a3, e.a4, e.a5, e.stack_id
FROM events e JOIN ops o ON o.id = e.op_id
LEFT JOIN processes p ON p.session_id = e.session_id AND p.pid = e.pid
WHERE o.kind = 'call';

CREATE VIEW v_cuda_calls AS
SELECT e.session_id, e.ts_ns, o.source, o.name AS op, e.pid, e.tid, p.comm,
       e.dur_ns / 1000.0 AS dur_us, e.ret,
       CASE WHEN o.name GLOB '*emcpy*' OR o.name GLOB '*emset*' OR o.name GLOB '*lloc*' OR o.name GLOB 'cuMem*' THEN e.a0 END AS bytes,
       e.a1 AS device_ptr,
       CASE WHEN o.name GLOB '*emcpy*' THEN e.a2 END AS copy_kind,
       e.a3 AS stream,
       e.a4 AS grid_packed, e.a5 AS block_packed, e.stack_id
FROM events e JOIN ops o ON o.id = e.op_id
LEFT JOIN processes p ON p.session_id = e.session_id AND p.pid = e.pid
WHERE o.source IN ('cuda', 'driver');

CREATE VIEW v_nccl_calls AS
SELECT e.session_id, e.ts_ns, o.name AS op, e.pid, e.tid, p.comm, e.dur_ns / 1000.0 AS dur_us, e.ret,
       e.a0 AS count, e.a1 AS comm_hash, e.a2 AS rank, e.a3 AS nranks, e.a4 AS seq,
       e.a5 & 255 AS datatype, (e.a5 >> 8) & 255 AS redop, e.a5 >> 16 AS peer
FROM events e JOIN ops o ON o.id = e.op_id
LEFT JOIN processes p ON p.session_id = e.session_id AND p.pid = e.pid
WHERE o.source = 'nccl';

CREATE VIEW v_host_events AS
SELECT e.session_id, e.ts_ns, o.source, o.name AS event, e.pid, e.tid, p.comm, e.cpu,
       e.dur_ns / 1000.0 AS dur_us, e.a0, e.a1, e.a2, e.a3, o.arg_names
FROM events e JOIN ops o ON o.id = e.op_id
LEFT JOIN processes p ON p.session_id = e.session_id AND p.pid = e.pid
WHERE o.source IN ('host', 'io', 'net', 'mem');

CREATE VIEW v_sched AS
SELECT s.session_id, s.ts_ns, s.cpu,
       s.prev_pid, s.prev_tid, tp.comm AS prev_comm,
       CASE WHEN s.prev_state = 0 THEN 'R' WHEN s.prev_state & 2 THEN 'D' WHEN s.prev_state & 1 THEN 'S'
            ELSE 'other' END AS prev_state,
       s.next_pid, s.next_tid, tn.comm AS next_comm
FROM sched s
LEFT JOIN threads tp ON tp.session_id = s.session_id AND tp.tid = s.prev_tid
LEFT JOIN threads tn ON tn.session_id = s.session_id AND tn.tid = s.next_tid;

CREATE VIEW v_op_seconds AS
SELECT r.session_id, r.sec, o.source, o.name AS op, r.pid, p.comm,
       SUM(r.count) AS calls, SUM(r.sum_ns) / 1000.0 AS total_us,
       MIN(r.min_ns) / 1000.0 AS min_us, MAX(r.max_ns) / 1000.0 AS max_us, SUM(r.errors) AS errors
FROM rollups r JOIN ops o ON o.id = r.op_id
LEFT JOIN processes p ON p.session_id = r.session_id AND p.pid = r.pid
GROUP BY r.session_id, r.sec, r.op_id, r.pid;

CREATE VIEW v_chains AS
SELECT id, session_id, created_ns, severity, cause, pid, comm, op, calls, p50_us, p99_us, slow_share,
       culprit_pid, culprit_comm, culprit_share, summary
FROM chains;

INSERT INTO schema_docs (object, column_name, unit, description) VALUES
 ('sessions', '', '', 'One capture: a live trace, a demo run or an import. Scope queries by session_id.'),
 ('sessions', 'source_kind', '', 'live | demo | import'),
 ('sessions', 'started_ns', 'unix ns', 'When the session began'),
 ('sessions', 'stopped_ns', 'unix ns', 'When it ended; NULL while still being written'),
 ('ops', '', '', 'Dictionary of traced operations; join events.op_id = ops.id'),
 ('ops', 'kind', '', 'call (has a duration) or event (a point in time)'),
 ('ops', 'arg_names', '', 'What a0..a5 of events mean for this op, comma-separated'),
 ('processes', '', '', 'Processes seen per session (comm, cmdline, exe are untrusted text from the process)'),
 ('threads', '', '', 'Thread id to process and thread name, including non-traced threads seen in sched'),
 ('events', '', '', 'One row per traced call (row written at return; ts_ns is the call start) or host event'),
 ('events', 'ts_ns', 'unix ns', 'Start of the call'),
 ('events', 'dur_ns', 'ns', 'Duration of the call'),
 ('events', 'ret', '', 'Return code; 0 is success (cudaSuccess, ncclSuccess)'),
 ('events', 'stack_id', '', 'stacks.id of the user stack at the call, if captured'),
 ('event_blocks', '', '', 'Zone map of events: rowid range and ts range per writer batch. For a time window, filter events by id BETWEEN the matching blocks first_id and last_id (fast) as well as by ts_ns'),
 ('sched', '', '', 'Context switches involving a traced thread; off-CPU time of thread T is from a row with prev_tid = T to the next row with next_tid = T'),
 ('sched', 'prev_state', '', '0 = preempted while runnable (CPU contention); 1 = sleeping (S); 2 = uninterruptible (D, usually I/O)'),
 ('wakeups', '', '', 'sched_wakeup of traced threads: who woke whom'),
 ('stacks', 'frames', 'json', 'JSON array of frames, innermost first: module!symbol+0xoff (file:line)'),
 ('chains', '', '', 'Causal chains found by the correlator; doc has evidence, timeline and recommendation as JSON'),
 ('rollups', '', '', 'Per op, process and second: count, sum, min, max, errors and a histogram blob'),
 ('collector_stats', '', '', 'Pipeline counters per session: events_seen, events_written, dropped_ring, dropped_writer'),
 ('test_reports', '', '', 'Reports stored by causeway selftest'),
 ('v_calls', '', '', 'Traced calls with op names, process name and duration in microseconds'),
 ('v_calls', 'dur_us', 'us', 'Call duration'),
 ('v_cuda_calls', '', '', 'CUDA runtime and driver calls with decoded arguments'),
 ('v_cuda_calls', 'copy_kind', '', 'cudaMemcpyKind: 0 HtoH, 1 HtoD, 2 DtoH, 3 DtoD, 4 default'),
 ('v_cuda_calls', 'grid_packed', '', 'grid dims packed x | y<<21 | z<<42'),
 ('v_nccl_calls', '', '', 'NCCL calls: communicator hash, rank, nranks, element count and per-communicator sequence number'),
 ('v_nccl_calls', 'seq', '', 'Per-communicator collective sequence number; the same seq across ranks is the same collective'),
 ('v_host_events', '', '', 'Host context: process lifecycle, block I/O, TCP retransmits, page allocation, OOM kills'),
 ('v_sched', '', '', 'Context switches with thread names; prev_state R means preempted (CPU contention)'),
 ('v_op_seconds', '', '', 'Per-second aggregates from rollups; cheap over hours of data'),
 ('v_chains', '', '', 'Diagnosed causal chains, one line each');

-- @migration 3
-- Host identity (docs/TRACEDB.md "System identity"): the session row keeps the host it ran
-- on. `system` is the JSON document of stats' `system` object (hostname, kernel, cpus,
-- cpu_model, memory_mb, boot_id, clock, gpus, driver, driver_reason); boot_id and
-- clock_offset_ns (CLOCK_REALTIME - CLOCK_MONOTONIC at session start) are columns too so a
-- merge can tell hosts and reboots apart and line timelines up with SQL alone.
ALTER TABLE sessions ADD COLUMN system TEXT;
ALTER TABLE sessions ADD COLUMN boot_id TEXT;
ALTER TABLE sessions ADD COLUMN clock_offset_ns INTEGER;
-- Where a process runs and, for a distributed job's rank, which rank it is and how that was
-- learned: 'init' (its ncclCommInitRank was traced) or the launcher variable read from its
-- environment at discovery (RANK, OMPI_COMM_WORLD_RANK, PMI_RANK, SLURM_PROCID).
ALTER TABLE processes ADD COLUMN cgroup_path TEXT;
ALTER TABLE processes ADD COLUMN rank INTEGER;
ALTER TABLE processes ADD COLUMN world_size INTEGER;
ALTER TABLE processes ADD COLUMN local_rank INTEGER;
ALTER TABLE processes ADD COLUMN rank_source TEXT;
ALTER TABLE processes ADD COLUMN job_id TEXT;  -- launcher's job identity (torchrun run id, SLURM job, MASTER_ADDR:PORT)

INSERT INTO schema_docs (object, column_name, unit, description) VALUES
 ('sessions', 'host', '', 'Hostname of the machine the session ran on (demo sessions: a synthetic name)'),
 ('sessions', 'system', 'json', 'Host identity: hostname, kernel, cpus, cpu_model, memory_mb, boot_id, gpus, driver (null with driver_reason when no NVIDIA driver)'),
 ('sessions', 'boot_id', '', 'Kernel boot id of the host (/proc/sys/kernel/random/boot_id)'),
 ('sessions', 'clock_offset_ns', 'ns', 'CLOCK_REALTIME - CLOCK_MONOTONIC at session start; timestamps are already Unix ns'),
 ('processes', 'cgroup_path', '', 'cgroup v2 path of the process (untrusted text)'),
 ('processes', 'rank', '', 'Rank of the process in its distributed job, when known'),
 ('processes', 'rank_source', '', 'How rank was learned: init (ncclCommInitRank traced) or the environment variable read (RANK, OMPI_COMM_WORLD_RANK, PMI_RANK, SLURM_PROCID)'),
 ('processes', 'job_id', '', 'Launcher job identity shared by the ranks of one job (untrusted text)');

-- A session made by `causeway merge` (docs/FLEET.md): one row per host it combines. The
-- merged session's pids, tids and CPUs are the host's own plus pid_base / cpu_base, so a
-- process of host k is pid_base <= pid < pid_base + 10000000 and never collides with another
-- host's (pids repeat across hosts).
CREATE TABLE merged_hosts (
  session_id        INTEGER NOT NULL,  -- the merged session
  host_index        INTEGER NOT NULL,
  host              TEXT,
  boot_id           TEXT,
  clock_offset_ns   INTEGER,
  system            TEXT,              -- the source session's system document
  source_file       TEXT NOT NULL,     -- file name of the input DB (no folder)
  source_sha256     TEXT NOT NULL,     -- of the input file: merging one input twice is refused
  source_session_id INTEGER NOT NULL,
  source_started_ns INTEGER NOT NULL,
  pid_base          INTEGER NOT NULL,
  cpu_base          INTEGER NOT NULL,
  PRIMARY KEY (session_id, host_index)
) WITHOUT ROWID;

INSERT INTO schema_docs (object, column_name, unit, description) VALUES
 ('merged_hosts', '', '', 'Hosts combined by causeway merge: a process of host k has pid_base <= pid < pid_base + 10000000 (its own pid is pid - pid_base); CPUs likewise with cpu_base'),
 ('merged_hosts', 'clock_offset_ns', 'ns', 'That host''s CLOCK_REALTIME - CLOCK_MONOTONIC at its session start');

-- @migration 4
-- Op families come from the op table (tracedb/op_catalog.cpp `OpFamily`), which the writer
-- keeps current in `ops` whenever it starts a session; the views read them instead of matching
-- op names. `bytes` is a0 for the ops whose first argument is a byte count (arg_names).
ALTER TABLE ops ADD COLUMN family TEXT;
DROP VIEW v_cuda_calls;
CREATE VIEW v_cuda_calls AS
SELECT e.session_id, e.ts_ns, o.source, o.name AS op, o.family, e.pid, e.tid, p.comm,
       e.dur_ns / 1000.0 AS dur_us, e.ret,
       CASE WHEN o.arg_names = 'bytes' OR substr(o.arg_names, 1, 6) = 'bytes,' THEN e.a0 END AS bytes,
       e.a1 AS device_ptr,
       CASE WHEN o.family = 'copy' THEN e.a2 END AS copy_kind,
       e.a3 AS stream,
       e.a4 AS grid_packed, e.a5 AS block_packed, e.stack_id
FROM events e JOIN ops o ON o.id = e.op_id
LEFT JOIN processes p ON p.session_id = e.session_id AND p.pid = e.pid
WHERE o.source IN ('cuda', 'driver');

INSERT INTO schema_docs (object, column_name, unit, description) VALUES
 ('ops', 'family', '', 'What the op does: sync, launch, copy, memset, alloc, host_alloc, collective, p2p, graph, setup, group, host (NULL for imported ops outside the catalog)'),
 ('v_cuda_calls', 'family', '', 'The op''s family (ops.family)');

-- @migration 5
-- Tenants (docs/TRACEDB.md "Cgroups and tenants"): the cgroup v2 id of every thread seen
-- (traced or not: the task that preempted a traced thread carries its own id in the switch
-- record), and what each id resolves to on the host — so a culprit that lived for 10 ms is
-- still attributed to its container.
ALTER TABLE threads ADD COLUMN cgroup_id INTEGER;
CREATE TABLE cgroups (
  session_id   INTEGER NOT NULL,
  cgroup_id    INTEGER NOT NULL,   -- cgroup v2 id (the inode of its folder in the cgroup2 mount)
  path         TEXT NOT NULL,      -- below the cgroup2 mount ('/' = root); untrusted text
  container_id TEXT,               -- docker/containerd/cri-o/podman id found in the path
  pod          TEXT,               -- Kubernetes pod uid found in the path
  PRIMARY KEY (session_id, cgroup_id)
) WITHOUT ROWID;

-- Which cause claimed each slow call (docs/DIAGNOSIS.md "Tail breakdown"): written by the
-- correlator with the chains, one row per call (or host stall before a call, gap = 1) that
-- a chain counts. Calls no cause claimed have no row.
CREATE TABLE call_causes (
  session_id INTEGER NOT NULL,
  op_id      INTEGER NOT NULL,
  pid        INTEGER NOT NULL,
  tid        INTEGER NOT NULL,
  ts_ns      INTEGER NOT NULL,   -- start of the call
  gap        INTEGER NOT NULL,   -- 1: the host stall in the gap before the call
  dur_ns     INTEGER NOT NULL,   -- the call's duration
  lost_ns    INTEGER NOT NULL,   -- time the cause took from it
  cause      TEXT NOT NULL,
  chain_id   TEXT NOT NULL,
  PRIMARY KEY (session_id, op_id, pid, tid, ts_ns, gap)
) WITHOUT ROWID;

-- TCP retransmits with readable endpoints (docs/TRACEDB.md "TCP retransmits"): IPv4 as
-- a.b.c.d:port, IPv6 as [addr]:port in RFC 5952 form (lowercase hex, the longest run of two
-- or more zero groups, the first of equal ones, written '::'). `sock_owner` 1: pid/tid/comm
-- are the process that owns the socket; 0: the task that happened to run (owner unknown).
CREATE VIEW v_tcp_retransmits AS
WITH zero_runs(run) AS (VALUES (':0:0:0:0:0:0:0:0:'), (':0:0:0:0:0:0:0:'), (':0:0:0:0:0:0:'), (':0:0:0:0:0:'),
                               (':0:0:0:0:'), (':0:0:0:'), (':0:0:')),
rt AS (
  SELECT e.session_id, e.ts_ns, e.pid, e.tid, e.cpu, e.cgroup_id, e.a5 AS sock_owner, o.name = 'tcp_retransmit6' AS v6,
         CASE WHEN o.name = 'tcp_retransmit6' THEN e.a4 & 65535 ELSE e.a1 END AS local_port,
         CASE WHEN o.name = 'tcp_retransmit6' THEN (e.a4 >> 16) & 65535 ELSE e.a3 END AS peer_port,
         CASE WHEN o.name = 'tcp_retransmit6' THEN (e.a4 >> 32) & 255 ELSE e.a4 END AS state,
         -- IPv4: the address; IPv6: its eight groups as ':g:g:g:g:g:g:g:g:'
         CASE WHEN o.name = 'tcp_retransmit6'
              THEN printf(':%x:%x:%x:%x:%x:%x:%x:%x:', (e.a0 >> 48) & 65535, (e.a0 >> 32) & 65535, (e.a0 >> 16) & 65535,
                          e.a0 & 65535, (e.a1 >> 48) & 65535, (e.a1 >> 32) & 65535, (e.a1 >> 16) & 65535, e.a1 & 65535)
              ELSE ((e.a0 >> 24) & 255) || '.' || ((e.a0 >> 16) & 255) || '.' || ((e.a0 >> 8) & 255) || '.' || (e.a0 & 255)
         END AS local_addr,
         CASE WHEN o.name = 'tcp_retransmit6'
              THEN printf(':%x:%x:%x:%x:%x:%x:%x:%x:', (e.a2 >> 48) & 65535, (e.a2 >> 32) & 65535, (e.a2 >> 16) & 65535,
                          e.a2 & 65535, (e.a3 >> 48) & 65535, (e.a3 >> 32) & 65535, (e.a3 >> 16) & 65535, e.a3 & 65535)
              ELSE ((e.a2 >> 24) & 255) || '.' || ((e.a2 >> 16) & 255) || '.' || ((e.a2 >> 8) & 255) || '.' || (e.a2 & 255)
         END AS peer_addr
  FROM events e JOIN ops o ON o.id = e.op_id
  WHERE o.source = 'net' AND o.name IN ('tcp_retransmit', 'tcp_retransmit6')),
-- IPv6 groups with the longest zero run replaced by '::', still wrapped in ':' where no '::' is.
squeezed AS (
  SELECT rt.*,
         (SELECT substr(local_addr, 1, instr(local_addr, run) - 1) || '::' || substr(local_addr, instr(local_addr, run) + length(run))
          FROM zero_runs WHERE v6 AND instr(local_addr, run) ORDER BY length(run) DESC LIMIT 1) AS local_sq,
         (SELECT substr(peer_addr, 1, instr(peer_addr, run) - 1) || '::' || substr(peer_addr, instr(peer_addr, run) + length(run))
          FROM zero_runs WHERE v6 AND instr(peer_addr, run) ORDER BY length(run) DESC LIMIT 1) AS peer_sq
  FROM rt),
named AS (
  SELECT squeezed.*,
         CASE WHEN NOT v6 THEN local_addr
              ELSE substr(coalesce(local_sq, local_addr), CASE WHEN coalesce(local_sq, local_addr) GLOB '::*' THEN 1 ELSE 2 END,
                          length(coalesce(local_sq, local_addr)) - (coalesce(local_sq, local_addr) NOT GLOB '::*')
                          - (coalesce(local_sq, local_addr) NOT GLOB '*::')) END AS local_ip,
         CASE WHEN NOT v6 THEN peer_addr
              ELSE substr(coalesce(peer_sq, peer_addr), CASE WHEN coalesce(peer_sq, peer_addr) GLOB '::*' THEN 1 ELSE 2 END,
                          length(coalesce(peer_sq, peer_addr)) - (coalesce(peer_sq, peer_addr) NOT GLOB '::*')
                          - (coalesce(peer_sq, peer_addr) NOT GLOB '*::')) END AS peer_ip
  FROM squeezed)
SELECT n.session_id, n.ts_ns, n.pid, n.tid, t.comm, n.sock_owner, n.cgroup_id, n.cpu,
       CASE WHEN n.v6 THEN 'ipv6' ELSE 'ipv4' END AS family,
       CASE WHEN n.v6 THEN '[' || n.local_ip || ']' ELSE n.local_ip END || ':' || n.local_port AS local,
       CASE WHEN n.v6 THEN '[' || n.peer_ip || ']' ELSE n.peer_ip END || ':' || n.peer_port AS peer,
       n.peer_ip, n.peer_port,
       CASE n.state WHEN 1 THEN 'ESTABLISHED' WHEN 2 THEN 'SYN_SENT' WHEN 3 THEN 'SYN_RECV' WHEN 4 THEN 'FIN_WAIT1'
                    WHEN 5 THEN 'FIN_WAIT2' WHEN 6 THEN 'TIME_WAIT' WHEN 7 THEN 'CLOSE' WHEN 8 THEN 'CLOSE_WAIT'
                    WHEN 9 THEN 'LAST_ACK' WHEN 10 THEN 'LISTEN' WHEN 11 THEN 'CLOSING' WHEN 12 THEN 'NEW_SYN_RECV'
                    ELSE n.state END AS state
FROM named n
LEFT JOIN threads t ON t.session_id = n.session_id AND t.tid = n.tid;

INSERT INTO schema_docs (object, column_name, unit, description) VALUES
 ('threads', 'cgroup_id', '', 'cgroup v2 id of the thread (join cgroups on session_id, cgroup_id)'),
 ('cgroups', '', '', 'cgroup ids seen in the session and their path, container id and pod uid (untrusted text)'),
 ('call_causes', '', '', 'One row per slow call a causal chain counts: which cause took how much of it. Join events on (session_id, op_id, pid, tid, ts_ns)'),
 ('call_causes', 'gap', '', '1 when the row is the host stall in the gap before the call rather than the call itself'),
 ('call_causes', 'lost_ns', 'ns', 'Time the cause took from the call (or gap)'),
 ('v_tcp_retransmits', '', '', 'TCP retransmits (ops tcp_retransmit, tcp_retransmit6) with readable endpoints: IPv4 a.b.c.d:port, IPv6 [addr]:port'),
 ('v_tcp_retransmits', 'sock_owner', '', '1: pid/tid/comm are the process owning the socket (it sent on or connected it); 0: the task that happened to run when the kernel retransmitted'),
 ('v_tcp_retransmits', 'peer', '', 'Remote address:port of the connection'),
 ('v_tcp_retransmits', 'state', '', 'TCP state of the socket at the retransmit (ESTABLISHED, SYN_SENT, FIN_WAIT1, …)');

-- @migration 6
-- CUDA graphs (docs/TRACEDB.md "Op argument layouts"): capture, instantiation and exec
-- destroy form the family graph_build. v_cuda_calls names the graph exec (a1 of
-- instantiations, launches and destroys) and the graph (a2 of capture ends and
-- instantiations; NULL where the op has none or a failed call wrote none), so launches count
-- per exec and an exec traces back to its capture.
DROP VIEW v_cuda_calls;
CREATE VIEW v_cuda_calls AS
SELECT e.session_id, e.ts_ns, o.source, o.name AS op, o.family, e.pid, e.tid, p.comm,
       e.dur_ns / 1000.0 AS dur_us, e.ret,
       CASE WHEN o.arg_names = 'bytes' OR substr(o.arg_names, 1, 6) = 'bytes,' THEN e.a0 END AS bytes,
       e.a1 AS device_ptr,
       CASE WHEN o.family = 'copy' THEN e.a2 END AS copy_kind,
       e.a3 AS stream,
       e.a4 AS grid_packed, e.a5 AS block_packed, e.stack_id,
       CASE WHEN o.family IN ('graph', 'graph_build') AND e.a1 != 0 THEN e.a1 END AS graph_exec,
       CASE WHEN o.family = 'graph_build' AND e.a2 != 0 THEN e.a2 END AS graph
FROM events e JOIN ops o ON o.id = e.op_id
LEFT JOIN processes p ON p.session_id = e.session_id AND p.pid = e.pid
WHERE o.source IN ('cuda', 'driver');

UPDATE schema_docs SET description = 'What the op does: sync, launch, copy, memset, alloc, host_alloc, collective, p2p, graph (graph launch), graph_build (graph capture, instantiation, exec destroy: host-side, nothing queued), setup, group, host (NULL for imported ops outside the catalog)'
 WHERE object = 'ops' AND column_name = 'family';
INSERT INTO schema_docs (object, column_name, unit, description) VALUES
 ('v_cuda_calls', 'graph_exec', '', 'CUDA graph exec of an instantiation (written on success), graph launch or exec destroy: launches per exec are GROUP BY graph_exec'),
 ('v_cuda_calls', 'graph', '', 'CUDA graph captured by a capture end, or instantiated by an instantiation: joins the two');

-- @migration 7
-- Inference requests (docs/INFERENCE.md): HTTP/1.1 exchanges seen on the sockets of serving
-- processes, one row each, and the engines' own Prometheus metrics sampled beside them.
CREATE TABLE requests (
  session_id     INTEGER NOT NULL,
  request_id     TEXT NOT NULL,     -- x-request-id, else generated ('gen-PID-CONN-N'); untrusted text
  id_generated   INTEGER NOT NULL,  -- 1 when the request carried no x-request-id
  server_pid     INTEGER NOT NULL,  -- the process owning the socket
  fd             INTEGER NOT NULL,
  method         TEXT NOT NULL,
  path           TEXT NOT NULL,     -- target without the query string; untrusted text
  tenant         TEXT NOT NULL,     -- the tenant header, else the client's address
  peer           TEXT NOT NULL,     -- client address:port ('' when unknown)
  start_ns       INTEGER NOT NULL,  -- first read of the request
  end_ns         INTEGER NOT NULL,  -- the read that completed it
  first_byte_ns  INTEGER,           -- first write of the response
  first_token_ns INTEGER,           -- the write carrying the first SSE data: event
  last_byte_ns   INTEGER,           -- the write completing the response
  ttft_ns        INTEGER,           -- end_ns → first token (streamed) or first byte (not streamed)
  e2e_ns         INTEGER,           -- start_ns → last_byte_ns
  itl_max_ns     INTEGER,           -- longest gap between consecutive tokens
  itl_us         TEXT,              -- JSON array: every gap between consecutive tokens, µs
  status         INTEGER NOT NULL,  -- 0: no response head seen
  prompt_bytes   INTEGER NOT NULL,
  response_bytes INTEGER NOT NULL,
  streamed       INTEGER NOT NULL,
  events         INTEGER NOT NULL,  -- SSE data: events ([DONE] excluded)
  complete       INTEGER NOT NULL   -- 0: the client went away or the trace ended mid-response
);
CREATE INDEX requests_by_time ON requests(session_id, start_ns);

CREATE TABLE engine_metrics (
  session_id INTEGER NOT NULL,
  ts_ns      INTEGER NOT NULL,
  pid        INTEGER NOT NULL,      -- the serving process scraped
  engine     TEXT NOT NULL,         -- vllm | tgi | sglang | unknown
  name       TEXT NOT NULL,         -- the metric's own name, as exposed
  labels     TEXT NOT NULL,         -- its label set as exposed ('' none)
  value      REAL NOT NULL
);
CREATE INDEX engine_metrics_by_time ON engine_metrics(session_id, pid, name, ts_ns);
CREATE TABLE engines (
  session_id INTEGER NOT NULL,
  pid        INTEGER NOT NULL,      -- the serving process
  engine     TEXT NOT NULL,         -- vllm | tgi | sglang | unknown
  url        TEXT NOT NULL,         -- the /metrics endpoint scraped
  PRIMARY KEY (session_id, pid)
) WITHOUT ROWID;

INSERT INTO schema_docs (object, column_name, unit, description) VALUES
 ('requests', '', '', 'One HTTP/1.1 request served by a traced process, seen on its socket from the kernel side (docs/INFERENCE.md)'),
 ('requests', 'start_ns', 'ns', 'Unix time of the server''s first read of the request'),
 ('requests', 'end_ns', 'ns', 'Unix time of the read that completed the request'),
 ('requests', 'ttft_ns', 'ns', 'Time to first token: end_ns to the write carrying the first SSE data: event (not streamed: the first response byte)'),
 ('requests', 'e2e_ns', 'ns', 'start_ns to the last byte written'),
 ('requests', 'itl_us', 'µs', 'JSON array of the gaps between consecutive SSE data: events (inter-token latency); json_each() lists them'),
 ('requests', 'complete', '', '0 when the response was cut off (client disconnect, trace end)'),
 ('engine_metrics', '', '', 'Samples of each detected inference engine''s Prometheus /metrics during the trace'),
 ('engine_metrics', 'value', '', 'The sample value (counters are cumulative, as exposed)'),
 ('engines', '', '', 'Inference engines detected among the serving processes, and the /metrics endpoint sampled');

-- @migration 8
-- Requests: model and tokens from the bodies, how each exchange ended (docs/INFERENCE.md
-- "Model and tokens", "Errors"). Strings are stored as the client sent them (bytes, possibly
-- not UTF-8); readers repair the encoding before JSON (docs/SECURITY.md "Bytes from requests").
ALTER TABLE requests ADD COLUMN tls INTEGER NOT NULL DEFAULT 0;        -- 1: read through a TLS library (plaintext)
ALTER TABLE requests ADD COLUMN model TEXT;                              -- the request body's "model" (else the response's); untrusted text
ALTER TABLE requests ADD COLUMN max_tokens INTEGER;                      -- the request's output cap (max_tokens, max_completion_tokens, max_new_tokens)
ALTER TABLE requests ADD COLUMN input_tokens INTEGER;                    -- the server's usage.prompt_tokens; NULL when it did not say
ALTER TABLE requests ADD COLUMN output_tokens INTEGER;                   -- usage.completion_tokens (TGI: details.generated_tokens); NULL when not said
ALTER TABLE requests ADD COLUMN tpot_ns INTEGER;                         -- time per output token after the first; NULL without output_tokens
ALTER TABLE requests ADD COLUMN content_events INTEGER NOT NULL DEFAULT 0;  -- SSE events carrying generated text
ALTER TABLE requests ADD COLUMN end_reason TEXT NOT NULL DEFAULT 'complete'; -- complete | aborted | disconnected | lost | trace_end
-- Rows written before: an incomplete response was counted as a disconnect.
UPDATE requests SET end_reason = 'disconnected' WHERE complete = 0;

INSERT INTO schema_docs (object, column_name, unit, description) VALUES
 ('requests', 'model', '', 'The model the request body named ("model"), else the one the response named; NULL when neither did'),
 ('requests', 'input_tokens', 'tokens', 'Prompt tokens as the server counted them (usage.prompt_tokens); NULL when the server did not say'),
 ('requests', 'output_tokens', 'tokens', 'Generated tokens as the server counted them (usage.completion_tokens, TGI details.generated_tokens); NULL when not said'),
 ('requests', 'tpot_ns', 'ns', 'Time per output token after the first: (last - first write carrying generated text) / (output_tokens - 1); streamed only'),
 ('requests', 'content_events', '', 'SSE data: events carrying generated text (choices[].delta.content or choices[].text non-empty, TGI token.text); an event may carry several tokens'),
 ('requests', 'end_reason', '', 'complete; aborted (the server closed before the response was complete); disconnected (the client left first); lost (framing lost); trace_end'),
 ('requests', 'tls', '', '1 when the connection was TLS and the request was read as plaintext through the server''s libssl (SSL_read/SSL_write uprobes)');

-- @migration 9
-- Requests timed from the kernel's arrival of their bytes (docs/INFERENCE.md "Arrival time"):
-- start_ns / end_ns are when the kernel received the request's first / last byte; the
-- server's read that completed it is kept, and the wait between the two (the request sat in
-- the socket's receive queue: an API server too busy to read). Rows written before: both the
-- read time, no wait known.
ALTER TABLE requests ADD COLUMN read_end_ns INTEGER;   -- the server's read that completed the request
ALTER TABLE requests ADD COLUMN api_wait_ns INTEGER;   -- end_ns → read_end_ns; NULL when not known
UPDATE requests SET read_end_ns = end_ns;

UPDATE schema_docs SET description = 'Unix time the kernel received the request''s first byte at the server''s socket (the server''s first read when the arrival is not known)'
 WHERE object = 'requests' AND column_name = 'start_ns';
UPDATE schema_docs SET description = 'Unix time the kernel received the request''s last byte at the server''s socket (the read that completed it when the arrival is not known)'
 WHERE object = 'requests' AND column_name = 'end_ns';
UPDATE schema_docs SET description = 'Time to first token: end_ns (the request''s last byte arrived) to the write carrying the first SSE data: event (not streamed: the first response byte)'
 WHERE object = 'requests' AND column_name = 'ttft_ns';
UPDATE schema_docs SET description = 'start_ns (the request''s first byte arrived) to the last byte written'
 WHERE object = 'requests' AND column_name = 'e2e_ns';
INSERT INTO schema_docs (object, column_name, unit, description) VALUES
 ('requests', 'read_end_ns', 'ns', 'Unix time of the server''s read that completed the request'),
 ('requests', 'api_wait_ns', 'ns', 'API wait: end_ns to read_end_ns, the time the complete request sat in the socket''s receive queue before the server read it (docs/INFERENCE.md "Arrival time")');

-- @migration 10
-- The correlator reads a session's rollups by second (the launch baselines, diagnosis/
-- rollup_baselines.h) on every live poll; rollups_sec alone made it read every session's
-- rows of those seconds and filter.
CREATE INDEX rollups_session_sec ON rollups (session_id, sec);
