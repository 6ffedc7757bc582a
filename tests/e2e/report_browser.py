#!/usr/bin/env python3
"""`causeway report` in a real browser (docs/REPORT.md "Checked in a browser").

For every demo scenario (`causeway demo --list`): write its report, check the file has no URL
a browser could fetch, load it in headless Chromium inside a network namespace with no
interface (`unshare -n`: a request could not leave even if the page tried), and check the DOM
Chromium built: one section per chain (`explain --json`), one histogram per op (`stats --json`),
the culprit's name in its chain's swimlanes, and for `incident` tar preempting python3 on CPU 3.
Where the page has the requests section (the `requests-*` scenarios), the laid-out page is
asked, over Chromium's DevTools protocol (--remote-debugging-pipe), for the box of every label
of the latency histograms: no two may overlap, each metric has its histogram bars, and the
analysed metric's tail is coloured by the causes `requests --json` names.
A DB whose comm and op names are markup is loaded too: no element comes from them.

Exits 77 (CTest: skipped) with the reason when Chromium or a network namespace is missing.
CAUSEWAY_REPORT_SCREENSHOTS=DIR keeps one 1200 px wide PNG per scenario there (docs/img/).
"""
import json
import os
import re
import select
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from html.parser import HTMLParser

BIN = os.environ.get("CAUSEWAY_BIN", "causeway")
FETCHERS = re.compile(
    r"(https?|ftp|wss?|file|data|javascript):|<[^<>]*\s(src|href|action|srcset|xlink:href|poster)\s*=\s*[\"']?[^\"'#\s>]"
    r"|url\(|@import|<script|<iframe|<object|<embed|<link|<img",
    re.I)


def skip(why):
    print("SKIP: " + why)
    sys.exit(77)


def run(args, **kw):
    return subprocess.run(args, check=True, capture_output=True, text=True, timeout=600, **kw).stdout


def find_chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    skip("no chromium on PATH (scripts/install-deps.sh --tests installs Debian's)")


def netns_prefix():
    for prefix in (["unshare", "-n"], ["unshare", "-rn"]):
        try:
            subprocess.run(prefix + ["true"], check=True, capture_output=True, timeout=30)
            return prefix
        except (subprocess.CalledProcessError, FileNotFoundError):
            continue
    skip("cannot create a network namespace (unshare -n needs root, unshare -rn user namespaces)")


class Dom(HTMLParser):
    """The elements the checks need, with the text inside each chain section and each lane."""

    def __init__(self):
        super().__init__()
        self.tags = {}
        self.chains = []          # [{"cause", "text", "lanes": {kind: text}}]
        self.op_figures = 0
        self.stack = []           # (tag, role) of open elements
        self.lane = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags[tag] = self.tags.get(tag, 0) + 1
        cls = (a.get("class") or "").split()
        role = None
        if tag == "section" and "chain" in cls:
            self.chains.append({"cause": a.get("data-cause"), "id": a.get("id"), "text": "", "lanes": {}})
            role = "chain"
        elif tag == "figure" and "op" in cls:
            self.op_figures += 1
        elif tag == "g" and "lane" in cls and self.chains:
            self.lane = a.get("data-lane")
            self.chains[-1]["lanes"].setdefault(self.lane, "")
            role = "lane"
        self.stack.append((tag, role))

    def handle_endtag(self, tag):
        while self.stack:
            t, role = self.stack.pop()
            if role == "lane":
                self.lane = None
            if t == tag:
                break

    def handle_data(self, data):
        if not self.chains or not any(r == "chain" for _, r in self.stack):
            return
        self.chains[-1]["text"] += data + " "
        if self.lane:
            self.chains[-1]["lanes"][self.lane] += data + " "


def load_in_browser(chromium, netns, html_path, tmp, png=None):
    profile = tempfile.mkdtemp(dir=tmp)
    base = netns + [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                    "--disable-background-networking", "--disable-component-update", "--disable-sync",
                    "--disable-extensions", "--user-data-dir=" + profile, "--hide-scrollbars"]
    url = "file://" + os.path.abspath(html_path)
    # One start of the browser does both: the DOM on stdout, the first 1800 px as a PNG.
    shot = ["--window-size=1200,1800", "--screenshot=" + png] if png else []
    dom = run(base + shot + ["--dump-dom", url], cwd=tmp)
    if png:
        with open(png, "rb") as f:
            assert f.read(8) == b"\x89PNG\r\n\x1a\n", png + " is not a PNG"
    return dom


# The requests figure's labels and bars as Chromium laid them out (page coordinates, px).
REQUEST_FIGURE_JS = r"""(() => {
  const fig = document.querySelector('figure.requests');
  if (!fig) return null;
  const box = t => { const r = t.getBoundingClientRect();
                     return {text: t.textContent, x0: r.left, x1: r.right, y0: r.top, y1: r.bottom}; };
  return {
    labels: [...fig.querySelectorAll('svg text')].map(box),
    metrics: [...fig.querySelectorAll('g.metric')].map(g => ({
      metric: g.dataset.metric,
      classes: [...g.querySelectorAll('rect')].map(r => r.getAttribute('class')),
    })),
  };
})()"""


class DevTools:
    """Chromium driven over --remote-debugging-pipe (fd 3 in, fd 4 out, NUL-separated JSON)."""

    def __init__(self, argv):
        self.to_browser_r, self.to_browser_w = os.pipe()
        self.from_browser_r, self.from_browser_w = os.pipe()

        def child_fds():
            a, b = os.dup(self.to_browser_r), os.dup(self.from_browser_w)
            os.dup2(a, 3)
            os.dup2(b, 4)

        self.proc = subprocess.Popen(argv + ["--remote-debugging-pipe", "about:blank"], preexec_fn=child_fds,
                                     close_fds=False, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        os.close(self.to_browser_r)
        os.close(self.from_browser_w)
        self.buf = b""
        self.next_id = 0

    def call(self, method, params=None, session=None, timeout=60):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self.to_browser_w, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            while b"\0" in self.buf:
                raw, self.buf = self.buf.split(b"\0", 1)
                reply = json.loads(raw)
                if reply.get("id") == self.next_id:
                    assert "error" not in reply, f"{method}: {reply['error']}"
                    return reply["result"]
            left = deadline - time.monotonic()
            assert left > 0, f"{method}: no answer from chromium in {timeout} s"
            ready, _, _ = select.select([self.from_browser_r], [], [], left)
            if ready:
                chunk = os.read(self.from_browser_r, 1 << 16)
                assert chunk, f"{method}: chromium closed the pipe"
                self.buf += chunk

    def close(self):
        try:
            self.call("Browser.close", timeout=10)
        except AssertionError:
            pass
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self.to_browser_w)
        os.close(self.from_browser_r)


def request_figure(chromium, netns, html_path, tmp):
    """REQUEST_FIGURE_JS's answer on the page laid out 1200 px wide, or None without the figure."""
    profile = tempfile.mkdtemp(dir=tmp)
    dt = DevTools(netns + [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                           "--disable-background-networking", "--disable-component-update", "--disable-sync",
                           "--disable-extensions", "--user-data-dir=" + profile, "--hide-scrollbars",
                           "--window-size=1200,1800"])
    try:
        target = dt.call("Target.createTarget", {"url": "file://" + os.path.abspath(html_path)})["targetId"]
        session = dt.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for _ in range(200):
            # The new target starts at about:blank (already "complete"): wait for the file itself.
            state = dt.call("Runtime.evaluate", {"expression": "location.protocol + document.readyState", "returnByValue": True},
                            session)
            if state["result"].get("value") == "file:complete":
                break
            time.sleep(0.05)
        got = dt.call("Runtime.evaluate", {"expression": REQUEST_FIGURE_JS, "returnByValue": True}, session)
        return got["result"].get("value")
    finally:
        dt.close()


def overlapping_labels(labels):
    """Pairs of labels whose boxes share more than a pixel each way."""
    bad = []
    for i, a in enumerate(labels):
        for b in labels[i + 1:]:
            if min(a["x1"], b["x1"]) - max(a["x0"], b["x0"]) > 1 and min(a["y1"], b["y1"]) - max(a["y0"], b["y0"]) > 1:
                bad.append((a["text"], b["text"]))
    return bad


def check_request_figure(chromium, netns, tmp, name, db, html):
    fig = request_figure(chromium, netns, html, tmp)
    assert fig is not None, f"{name}: the page has a requests section but no latency figure"
    assert len(fig["labels"]) >= 12, f"{name}: {len(fig['labels'])} labels in the requests figure"
    bad = overlapping_labels(fig["labels"])
    assert not bad, f"{name}: overlapping labels in the requests figure: {bad}"
    doc = json.loads(run([BIN, "requests", "--db", db, "--json"]))["requests"]
    tail = doc.get("tail") or {}
    causes = [c["cause"] for c in tail.get("causes") or [] if c.get("share_time", 0) > 0]
    by_metric = {m["metric"]: m["classes"] for m in fig["metrics"]}
    assert sorted(by_metric) == ["e2e", "itl", "ttft"], by_metric.keys()
    for metric, classes in by_metric.items():
        if doc.get(metric + "_ms"):
            assert "bar" in classes, f"{name}: no histogram bars for {metric}"
    if causes:
        coloured = [c for c in by_metric[tail["metric"]] if re.fullmatch(r"c\d+", c or "")]
        assert coloured, f"{name}: the {tail['metric']} tail is not coloured by its causes {causes}"
    return len(fig["labels"])


def check_scenario(chromium, netns, tmp, name, shots):
    db, html = os.path.join(tmp, name + ".db"), os.path.join(tmp, name + ".html")
    run([BIN, "demo", name, "--db", db])
    run([BIN, "report", "--db", db, "-o", html, "--quiet"])
    with open(html, encoding="utf-8") as f:
        text = f.read()
    m = FETCHERS.search(text)
    assert not m, f"{name}: the page could fetch {m.group(0)!r}"
    png = os.path.join(shots or tmp, name + ".png")
    dom = Dom()
    dom.feed(load_in_browser(chromium, netns, html, tmp, png))
    explained = json.loads(run([BIN, "explain", "--db", db, "--json", "--limit", "10"]))["chains"]
    # explain leads with request-level chains when the session served requests (computed from
    # the request tails, docs/INFERENCE.md); the page's chain sections are explain's chains in
    # its order, request-level ones first, each drawn over the requests it slowed.
    chains = explained
    ops = json.loads(run([BIN, "stats", "--db", db, "--json"]))["ops"]
    assert len(dom.chains) == len(chains), f"{name}: {len(dom.chains)} chain sections, explain has {len(chains)}"
    assert dom.op_figures == min(len(ops), 24), f"{name}: {dom.op_figures} histograms for {len(ops)} ops"
    assert dom.tags.get("script", 0) == 0
    for shown, chain in zip(dom.chains, chains):
        assert shown["cause"] == chain["cause"], f"{name}: chain order differs from explain"
        if chain.get("level") == "request" and chain.get("requests"):
            lane = shown["lanes"].get("request", "")
            assert "req " + chain["requests"][0] in lane, f"{name} {shown['id']}: no lane for request {chain['requests'][0]}"
        culprit = chain.get("culprit") or {}
        if culprit.get("comm") and culprit.get("pid") and shown["lanes"]:
            lanes = " ".join(shown["lanes"].values())
            assert culprit["comm"] in lanes, f"{name} {shown['id']}: culprit {culprit['comm']} not in its swimlanes"
    if name == "incident":
        first = dom.chains[0]
        assert first["cause"] == "cpu_contention"
        assert "CPU 3" in first["lanes"].get("cpu", ""), first["lanes"]
        assert re.search(r"\btar\b", first["lanes"]["cpu"]), first["lanes"]["cpu"]
        assert "python3" in first["lanes"].get("victim", ""), first["lanes"]
        assert "preempted by tar" in first["lanes"]["victim"], first["lanes"]["victim"]
    labels = ""
    if 'id="requests"' in text:
        labels = f", {check_request_figure(chromium, netns, tmp, name, db, html)} request labels apart"
    print(f"ok {name}: {len(dom.chains)} chains, {dom.op_figures} histograms{labels}, {os.path.getsize(html)} bytes")


def check_hostile(chromium, netns, tmp):
    db, html = os.path.join(tmp, "hostile.db"), os.path.join(tmp, "hostile.html")
    run([BIN, "demo", "incident", "--db", db])
    evil = "<script>document.title='pwned'</script></svg><img src=x>\u202e\u0007"
    con = sqlite3.connect(db)
    con.execute("UPDATE processes SET comm = ?", (evil,))
    con.execute("UPDATE threads SET comm = ?", (evil,))
    con.execute("UPDATE ops SET name = ? || name", (evil,))
    con.execute("UPDATE chains SET doc = json_set(doc, '$.comm', ?1, '$.op', ?1, '$.culprit.comm', ?1)", (evil,))
    con.commit()
    con.close()
    run([BIN, "report", "--db", db, "-o", html, "--quiet"])
    dom = Dom()
    dom.feed(load_in_browser(chromium, netns, html, tmp))
    assert dom.tags.get("script", 0) == 0 and dom.tags.get("img", 0) == 0, dom.tags
    assert dom.chains and "<script>" in dom.chains[0]["text"], "the hostile name should show as text"
    print("ok hostile names stay text")


def main():
    chromium = find_chromium()
    netns = netns_prefix()
    shots = os.environ.get("CAUSEWAY_REPORT_SCREENSHOTS")
    with tempfile.TemporaryDirectory() as tmp:
        names = [line.split()[0] for line in run([BIN, "demo", "--list"]).splitlines() if line.strip()]
        assert "incident" in names
        for name in names:
            check_scenario(chromium, netns, tmp, name, shots)
        check_hostile(chromium, netns, tmp)


if __name__ == "__main__":
    main()
