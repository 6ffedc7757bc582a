#!/usr/bin/env python3
"""verdict.json for scripts/gpu-check.sh (docs/GPU.md "Verdicts"): for each planted incident,
what causeway should have named (cause and culprit) against what `explain --json` said.

  gpu_verdict.py RESULTS_DIR     reads RESULTS_DIR/phases/<phase>/{phase.json, workload.json,
                                 explain.json, stats.json, requests.json}; writes
                                 RESULTS_DIR/verdict.json; prints one line per incident

Verdicts: right (expected cause on the victim, culprit right), partial (the neighbouring
diagnosis, or the right cause with the wrong culprit), wrong (chains, none of them right),
missing (no chain for the victim), not_seen (the trace has none of the calls the verdict rests
on), skipped (the step did not run: the reason says why), error (the step failed). Exit status
0 when every incident that ran is right, 1 otherwise.
"""
import json
import os
import sys


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def chains_of(doc, pid):
    return [c for c in (doc or {}).get("chains", []) if c.get("pid") == pid]


def brief(c):
    cul = c.get("culprit") or {}
    who = ""
    if cul.get("pid") is not None:
        who = "%s (pid %s)" % (cul.get("comm", "?"), cul.get("pid"))
    elif cul:
        who = json.dumps(cul)[:120]
    return {"cause": c.get("cause"), "severity": c.get("severity"), "op": c.get("op"), "culprit": who or None,
            "summary": (c.get("summary") or "")[:300]}


def op_count(stats, name):
    return sum(o.get("count", 0) for o in (stats or {}).get("ops", []) if o.get("op") == name)


# Expected diagnosis per phase: the cause on the victim (the phase's main pid), a test of the
# culprit (None: the cause has no culprit), and neighbouring causes that count as partial.
def culprit_is_hog(c, w):
    cul = c.get("culprit") or {}
    return cul.get("pid") == w.get("hog_pid") or cul.get("comm") == "cw_hog"


def culprit_is_worker(c, w):
    cul = c.get("culprit") or {}
    return cul.get("pid") in w.get("worker_pids", []) or cul.get("comm") == "pt_data_worker"


EXPECT = {
    "cpu_hog": ("cpu_contention", culprit_is_hog, "cw_hog, the process spinning on the trainer's CPU", []),
    "dataloader": ("dataloader_starvation", culprit_is_worker, "a DataLoader worker (pt_data_worker)", []),
    "launch_bound": ("launch_bound", None, "none", ["host_bound"]),
    "graph_recapture": ("graph_recapture", None, "none", []),
}


def judge_cause(phase, w, explain):
    cause, culprit_ok, culprit_text, related = EXPECT[phase]
    pid = w.get("pid")
    mine = chains_of(explain, pid)
    v = {"expected": {"cause": cause, "culprit": culprit_text}, "got": [brief(c) for c in mine[:5]]}
    hit = next((c for c in mine if c.get("cause") == cause), None)
    if hit is not None:
        v["top"] = mine[0] is hit  # the victim's most severe chain
        v["severity"] = hit.get("severity")
        if culprit_ok is None or culprit_ok(hit, w):
            v["verdict"] = "right"
        else:
            v["verdict"] = "partial"
            v["reason"] = "%s named, but the culprit is %s, not %s" % (cause, brief(hit)["culprit"], culprit_text)
        return v
    near = next((c for c in mine if c.get("cause") in related), None)
    if near is not None:
        v["verdict"] = "partial"
        v["reason"] = "named %s, the neighbouring diagnosis, not %s" % (near.get("cause"), cause)
    elif mine:
        v["verdict"] = "wrong"
        v["reason"] = "chains for pid %s, none %s" % (pid, cause)
    else:
        v["verdict"] = "missing"
        v["reason"] = "no chain for pid %s" % pid
    return v


def judge_graph_replay(w, explain, stats):
    launches = op_count(stats, "cudaGraphLaunch") + op_count(stats, "cuGraphLaunch")
    mine = chains_of(explain, w.get("pid"))
    v = {"expected": {"cause": "no graph_recapture (a graph captured once and replayed is healthy)", "culprit": "none"},
         "got": [brief(c) for c in mine[:5]], "graph_launches": launches}
    if any(c.get("cause") == "graph_recapture" for c in mine):
        v["verdict"] = "wrong"
        v["reason"] = "graph_recapture named on a graph captured once"
    elif launches < max(10, w.get("steps", 0) // 2):
        v["verdict"] = "not_seen"
        v["reason"] = "%d graph launches traced for %d replays: the absence of a chain proves nothing" % (
            launches, w.get("steps", 0))
    else:
        v["verdict"] = "right"
    return v


def judge_inference(w, requests):
    v = {"expected": {"cause": "every request seen, streamed", "culprit": "none"}, "sent": w.get("sent"),
         "completed": w.get("completed")}
    r = (requests or {}).get("requests")
    if r is None:
        v["verdict"] = "error"
        v["reason"] = "requests --json gave no requests object"
        return v
    v["got"] = {"count": r.get("count"), "streamed": r.get("streamed"), "errors": r.get("errors"),
                "ttft_ms": r.get("ttft_ms"), "itl_ms": r.get("itl_ms")}
    sent = w.get("completed", 0)
    if r.get("count") == sent and r.get("streamed") == sent and sent > 0:
        v["verdict"] = "right"
    else:
        v["verdict"] = "wrong"
        v["reason"] = "%s requests completed by the client; causeway saw %s (%s streamed)" % (
            sent, r.get("count"), r.get("streamed"))
    return v


def judge(results, phase):
    d = os.path.join(results, "phases", phase)
    meta = load(os.path.join(d, "phase.json")) or {}
    if meta.get("skipped"):
        return {"verdict": "skipped", "reason": meta["skipped"]}
    if meta.get("error"):
        return {"verdict": "error", "reason": meta["error"]}
    w = load(os.path.join(d, "workload.json"))
    if w is None:
        return {"verdict": "error", "reason": "the workload wrote no result (see workload.log)"}
    explain = load(os.path.join(d, "explain.json"))
    if phase == "inference":
        if meta.get("requests_skipped"):
            v = {"verdict": "skipped", "reason": meta["requests_skipped"], "sent": w.get("sent"),
                 "completed": w.get("completed")}
        else:
            v = judge_inference(w, load(os.path.join(d, "requests.json")))
    elif explain is None:
        return {"verdict": "error", "reason": "no explain --json output (see explain.err)"}
    elif phase == "graph_replay":
        v = judge_graph_replay(w, explain, load(os.path.join(d, "stats.json")))
    else:
        v = judge_cause(phase, w, explain)
    v["pid"] = w.get("pid")
    v["steps"] = w.get("steps")
    for k in ("read_mode", "worker_pids", "hog_pid", "cpu"):
        if k in w:
            v[k] = w[k]
    return v


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: gpu_verdict.py RESULTS_DIR")
    results = sys.argv[1]
    run = load(os.path.join(results, "run.json")) or {}
    incidents = {}
    for phase in run.get("phases", []):
        incidents[phase] = judge(results, phase)
    ran = [v for v in incidents.values() if v["verdict"] != "skipped"]
    # Published after every phase: the phases still to run make the run incomplete.
    complete = len(incidents) == len(run.get("requested", incidents))
    doc = {"mode": run.get("mode"), "gpu": run.get("gpu"), "driver": run.get("driver"), "host": run.get("host"),
           "kernel": run.get("kernel"), "causeway": run.get("causeway"), "torch": run.get("torch"),
           "check_ready": run.get("check_ready"), "trace_skipped": run.get("trace_skipped"),
           "elapsed_s": run.get("elapsed_s"), "complete": complete,
           "all_right": complete and bool(ran) and all(v["verdict"] == "right" for v in ran),
           "incidents": incidents}
    # The bench phase's figures (scripts/gpu-check.sh run_bench, docs/GPU.md "The bench phase"):
    # not part of the verdict, carried beside it.
    bench = load(os.path.join(results, "bench", "bench.json"))
    if bench is not None:
        doc["bench"] = bench
    with open(os.path.join(results, "verdict.json"), "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    for phase, v in incidents.items():
        print("%-16s %-8s %s" % (phase, v["verdict"], v.get("reason", "")))
    print("all right" if doc["all_right"] else "NOT all right")
    return 0 if doc["all_right"] else 1


if __name__ == "__main__":
    sys.exit(main())
