-- Legitimate analyst queries: every case must be accepted and run on the fixture DB.
-- Format: a line "#@ <name> ok", then the SQL.
#@ select_one ok
SELECT 1
#@ sessions_all ok
SELECT * FROM sessions
#@ count_events ok
SELECT count(*) FROM events;
#@ lower_case ok
select id, label from sessions order by id desc limit 5
#@ group_by_op ok
SELECT op, count(*) AS n, avg(dur_us) FROM v_calls GROUP BY op ORDER BY n DESC
#@ cte_simple ok
WITH slow AS (SELECT * FROM v_calls WHERE dur_us > 5) SELECT op, count(*) FROM slow GROUP BY op
#@ cte_columns ok
WITH slow(op, n) AS (SELECT op, count(*) FROM v_calls GROUP BY op) SELECT * FROM slow
#@ cte_two ok
WITH a AS (SELECT pid FROM events), b(p, c) AS (SELECT pid, count(*) FROM a GROUP BY pid) SELECT * FROM b ORDER BY c DESC
#@ cte_recursive ok
WITH RECURSIVE seq(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM seq WHERE n < 10) SELECT n FROM seq
#@ window_row_number ok
SELECT op, dur_us, row_number() OVER (PARTITION BY op ORDER BY dur_us DESC) AS rn FROM v_calls
#@ window_named ok
SELECT pid, ts_ns - lag(ts_ns) OVER w AS gap_ns FROM events WINDOW w AS (PARTITION BY pid ORDER BY ts_ns)
#@ join_processes ok
SELECT e.pid, p.comm, count(*) FROM events e JOIN processes p ON p.session_id = e.session_id AND p.pid = e.pid GROUP BY e.pid, p.comm
#@ join_using ok
SELECT e.id, o.name FROM events e LEFT JOIN ops o USING (id) LIMIT 3
#@ json_extract ok
SELECT json_extract(frames, '$[0]') FROM stacks
#@ json_arrows ok
SELECT frames -> '$[0]', frames ->> '$[1]' FROM stacks
#@ json_each ok
SELECT s.id, j.value FROM stacks s, json_each(s.frames) j
#@ json_tree ok
SELECT key, value FROM json_tree('{"a":[1,2]}')
#@ string_with_drop ok
SELECT 'DROP TABLE events' AS s
#@ string_with_semicolon ok
SELECT * FROM sessions WHERE label = 'x; DELETE FROM events'
#@ string_doubled_quote ok
SELECT 'it''s; DROP TABLE events' AS s
#@ quoted_identifiers ok
SELECT "comm", [pid], `ppid` FROM processes
#@ quoted_write_alias ok
SELECT count(*) AS "delete" FROM events
#@ quoted_write_column ok
SELECT "update" FROM (SELECT 1 AS "update")
#@ leading_line_comment ok
-- top operations
SELECT op FROM v_calls LIMIT 1
#@ comment_with_drop ok
/* comment with DROP TABLE events */ SELECT 1
#@ trailing_comment ok
SELECT 1 -- ; DELETE FROM events
#@ explain_query_plan ok
EXPLAIN QUERY PLAN SELECT * FROM events WHERE ts_ns > 0
#@ explain ok
EXPLAIN SELECT 1
#@ values ok
VALUES (1, 'a'), (2, 'b')
#@ cast_real ok
SELECT CAST(dur_ns AS REAL) / 1e3 FROM events LIMIT 1
#@ cast_typed ok
SELECT CAST(pid AS VARCHAR(10)) FROM processes
#@ datetime ok
SELECT datetime(started_ns / 1000000000, 'unixepoch') FROM sessions
#@ strftime ok
SELECT strftime('%Y-%m-%d', 'now')
#@ string_functions ok
SELECT replace(comm, 'py', 'PY'), upper(comm), trim(comm), ltrim(comm, 'p'), substr(comm, 1, 3) FROM processes
#@ iif_coalesce ok
SELECT iif(ret = 0, 'ok', 'err'), coalesce(cpu, -1) FROM events LIMIT 5
#@ like_glob ok
SELECT op FROM v_calls WHERE op LIKE 'cuda%' AND op GLOB 'cuda*' LIMIT 5
#@ sqlite_master ok
SELECT name FROM sqlite_master WHERE type = 'view'
#@ schema_docs ok
SELECT * FROM schema_docs WHERE object = 'events'
#@ union ok
SELECT pid FROM events UNION SELECT pid FROM processes
#@ literals ok
SELECT x'00ff' AS b, 0x1F AS h, 1.5e3 AS f, .5 AS g, -3 AS n
#@ ntile ok
SELECT op, ntile(4) OVER (ORDER BY dur_us) FROM v_calls
#@ filter_clause ok
SELECT op, sum(dur_us) FILTER (WHERE is_error) FROM v_calls GROUP BY op
#@ view_sched ok
SELECT * FROM v_sched LIMIT 10
#@ view_op_seconds ok
SELECT sec, calls FROM v_op_seconds
#@ in_subquery ok
SELECT * FROM events WHERE pid IN (SELECT pid FROM processes WHERE comm = 'python3')
#@ percent_rank ok
SELECT round(percent_rank() OVER (ORDER BY dur_ns), 2) FROM events
#@ exists ok
SELECT EXISTS (SELECT 1 FROM chains)
#@ printf_unicode ok
SELECT printf('%d us', 5), format('%s', 'x'), length('héllo'), 'naïve ​ zero-width in a string' AS s
#@ json_build ok
SELECT json_object('a', 1, 'b', json_array(1, 2)), json_group_array(pid) FROM processes
#@ view_cuda ok
SELECT * FROM v_cuda_calls LIMIT 5
#@ view_nccl ok
SELECT * FROM v_nccl_calls LIMIT 5
#@ view_host ok
SELECT * FROM v_host_events LIMIT 5
#@ view_chains ok
SELECT * FROM v_chains
#@ having ok
SELECT session_id, max(ts_ns) - min(ts_ns) FROM events GROUP BY 1 HAVING count(*) > 1
#@ math ok
SELECT sqrt(4), pow(2, 10), log10(1000), floor(1.5), abs(-2)
#@ case_when ok
SELECT CASE WHEN dur_us > 5 THEN 'slow' ELSE 'fast' END AS speed, count(*) FROM v_calls GROUP BY 1
#@ main_qualified ok
SELECT count(*) FROM main.events
#@ between_order ok
SELECT id FROM events WHERE ts_ns BETWEEN 0 AND 9e18 ORDER BY ts_ns DESC NULLS LAST LIMIT 3
