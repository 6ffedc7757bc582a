#!/usr/bin/env python3
"""The figures of scripts/gpu-check.sh's bench phase (docs/GPU.md "The bench phase"), read from
what the two cost benches print, into one JSON document.

  bench_figures.py --launch trace_cost.out [--launch-err FILE] --requests request_cost.out
                   [--requests-err FILE] [--tls tls_cost.out --tls-err FILE] [--cpus JSON] > bench.json

--launch: bench/trace_cost's text. Its table is read by the header's column names (two or
more spaces apart: "untraced", "bare probes", "clock probes", "causeway", "ratio", "ratio over
clock", "added over clock", "probe ratio", whatever columns it has then; a column in µs gets
_us: bare_probes_us is the empty bpftrace pair, clock_probes_us the pair that reads the clock,
added_over_clock_us causeway's time over it), each row that starts with "causeway trace" giving one configuration,
and its accounting lines ("CONFIG: 300000 calls made, 299990 recorded, ...") by the words
after each number; a column or count the bench adds or drops changes nothing here, and a
figure it no longer prints is simply absent.
--requests: bench/request_cost.py's output, whose last line is its JSON summary.
--tls: bench/tls_cost.py's output, the same way (its per-run details left out).
Any may be missing or unreadable: its entry then says why ("error", and the tail of its
stderr: why it did not run or failed), the others stay.
"""
import argparse
import json
import re
import sys

NUMBER = re.compile(r"(-?\d+(?:\.\d+)?)\s*(µs|us|ns|ms|×|x)?")


def parse_launch(text):
    header = None
    configs = {}
    for line in text.splitlines():
        if line.startswith("configuration"):
            header = [h for h in re.split(r"\s{2,}", line.strip())][1:]
            continue
        if header and line.startswith("causeway trace"):
            parts = re.split(r"\s{2,}", line.strip())
            name = parts[0][len("causeway trace"):].strip() or "(defaults)"
            cells = " ".join(parts[1:])
            values = [(float(v), unit or "") for v, unit in NUMBER.findall(cells)]
            row = {}
            for col, (v, unit) in zip(header, values):
                key = col.replace(" ", "_")
                row[key + ("_us" if unit in ("µs", "us") else "")] = v
            configs[name] = row
            continue
        m = re.match(r"^(.*?): (\d+ calls made.*)$", line)
        if m:
            name = m.group(1).strip() or "(defaults)"
            counts = {}
            for n, words in re.findall(r"(\d+) ([a-z][a-z ]*?)(?=,|\(|$)", m.group(2)):
                counts[words.strip().replace(" ", "_")] = int(n)
            configs.setdefault(name, {})["counts"] = counts
    if not configs:
        return {"error": "no configuration rows in the launch bench's output"}
    head = next((l for l in text.splitlines() if l.startswith("trace_cost:")), "")
    doc = {"configs": configs, "header": head}
    # The key=value lines after "figures:" (the tracer's CPU at the paced rate among them).
    figures, on = {}, False
    for line in text.splitlines():
        if line.startswith("figures:"):
            on = True
            continue
        m = re.match(r"^([a-z0-9_]+)=(-?[0-9.]+)$", line.strip()) if on else None
        if m:
            figures[m.group(1)] = float(m.group(2))
    if figures:
        doc["figures"] = figures
    return doc


def parse_requests(text, what="request bench"):
    for line in reversed(text.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                break
    return {"error": "no JSON summary in the %s's output" % what}


def parse_tls(text):
    doc = parse_requests(text, "TLS bench")
    doc.pop("runs", None)  # every run's details: in tls.out
    return doc


def tail(path, n=400):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()[-n:].strip()
    except OSError:
        return ""


def read(path, err_path, parse, what):
    if not path:
        return None
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            doc = parse(f.read())
    except OSError:
        doc = {"error": "%s did not run" % what}
    if "error" in doc and err_path and tail(err_path):
        doc["stderr"] = tail(err_path)
    return doc


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--launch")
    ap.add_argument("--launch-err")
    ap.add_argument("--requests")
    ap.add_argument("--requests-err")
    ap.add_argument("--tls")
    ap.add_argument("--tls-err")
    ap.add_argument("--cpus", help="a JSON object: which cores each role was pinned to")
    a = ap.parse_args()
    doc = {}
    launch = read(a.launch, a.launch_err, parse_launch, "launch bench")
    if launch is not None:
        doc["launch"] = launch
    requests = read(a.requests, a.requests_err, parse_requests, "request bench")
    if requests is not None:
        doc["requests"] = requests
    tls = read(a.tls, a.tls_err, parse_tls, "TLS bench")
    if tls is not None:
        doc["tls"] = tls
    if a.cpus:
        doc["cpus"] = json.loads(a.cpus)
    json.dump(doc, sys.stdout, indent=1)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
