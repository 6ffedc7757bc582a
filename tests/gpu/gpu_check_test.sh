#!/bin/sh
# scripts/gpu-check.sh as a test: --fake (the fake libcudart, CI) or --gpu (a real GPU and
# PyTorch; skipped when nvidia-smi finds no GPU). Passes when verdict.json says every planted
# incident was named right; the inference loop may be skipped only for a causeway without
# `requests`. Prints the summary either way.
#   gpu_check_test.sh --fake|--gpu SOURCE_DIR BUILD_DIR
set -u
kind=$1 src=$2 build=$3
out="$build/gpu-check-${kind#--}"
rm -rf "$out"
if [ "$kind" = --gpu ]; then
  if ! command -v nvidia-smi > /dev/null; then echo "SKIP: no nvidia-smi: no NVIDIA driver on this host"; exit 77; fi
  if ! nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then echo "SKIP: nvidia-smi finds no GPU"; exit 77; fi
  "$src/scripts/gpu-check.sh" --build "$build" --out "$out"; rc=$?
else
  "$src/scripts/gpu-check.sh" --fake --build "$build" --out "$out"; rc=$?
fi
[ $rc -ne 77 ] || exit 77
[ -f "$out/verdict.json" ] || { echo "FAIL: no verdict.json (exit $rc)"; exit 1; }
python3 - "$out/verdict.json" <<'PY'
import json, sys
v = json.load(open(sys.argv[1]))
bad = []
for name in ["cpu_hog", "dataloader", "launch_bound", "graph_replay", "graph_recapture", "inference"]:
    i = v["incidents"].get(name)
    if i is None:
        bad.append(name + ": not run")
    elif i["verdict"] == "skipped" and name == "inference" and "no 'requests' command" in i.get("reason", ""):
        continue
    elif i["verdict"] != "right":
        bad.append("%s: %s %s got %s" % (name, i["verdict"], i.get("reason", ""), json.dumps(i.get("got"))[:600]))
# The bench phase (on by default): the request-tracing figures, the launch bench's figures or the
# reason it could not run (no bpftrace), the TLS figures or why not (no openssl), the cores used.
b = v.get("bench")
if not isinstance(b, dict):
    bad.append("bench: no figures in verdict.json")
else:
    r = b.get("requests", {})
    if not isinstance(r.get("auto_p50_ratio"), (int, float)) or not r.get("auto_requests"):
        bad.append("bench: no request-tracing figures: " + json.dumps(r)[:600])
    l = b.get("launch", {})
    c = next(iter(l.get("configs", {}).values()), {})
    if not isinstance(c.get("ratio"), (int, float)) and "bpftrace" not in l.get("stderr", ""):
        bad.append("bench: no launch figures: " + json.dumps(l)[:600])
    elif "ratio" in c and not any(k.endswith("tracer_cpu_pct") for k in l.get("figures", {})):
        bad.append("bench: no tracer CPU figure in the launch bench: " + json.dumps(l.get("figures"))[:600])
    elif "ratio" in c and not all(isinstance(c.get(k), (int, float)) for k in ("clock_probes_us", "added_over_clock_us")):
        bad.append("bench: no clock-pair baseline in the launch bench: " + json.dumps(c)[:600])
    # TLS: its figures, every request stored, or the reason it could not run (no openssl).
    t = b.get("tls", {})
    if not isinstance(t.get("causeway_p50_ratio"), (int, float)) and "openssl" not in t.get("stderr", ""):
        bad.append("bench: no TLS figures: " + json.dumps(t)[:600])
    elif "causeway_p50_ratio" in t and t.get("causeway_stored") != t.get("causeway_requests"):
        bad.append("bench: TLS requests not all stored: " + json.dumps(t)[:600])
    if not isinstance(b.get("cpus"), dict) or "separate" not in b["cpus"]:
        bad.append("bench: no core layout: " + json.dumps(b.get("cpus"))[:200])
    print("bench: " + json.dumps(b)[:1500])
print("\n".join(bad) or "every planted incident named right")
sys.exit(1 if bad else 0)
PY
vrc=$?
[ $vrc -eq 0 ] && [ $rc -eq 0 ] && { echo PASS; exit 0; }
[ $vrc -eq 0 ] && { echo "FAIL: gpu-check.sh exited $rc"; exit 1; }
exit 1
