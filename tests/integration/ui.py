#!/usr/bin/python3
"""The web UI against a simulated fleet: its serving, every page in a real
headless Chromium, and every PromQL expression of its panels.

- starts `kelvin sim fleet` (4 nodes x 8 GPUs, scenario xid-storm, so the
  alert pack's GPUXidError fires), a training job's metrics (a histogram,
  a counter, a gauge: the fleet sends no application metrics) and
  `kelvin server` scraping them and itself every 2 s with
  rules/gpu.rules.yml;
- checks the UI's serving (tests/integration/ui/browser.py);
- waits for GPUXidError firing on a node and for every recording rule the
  UI names, then drives every page in Chromium (ui/e2e.mjs through
  ui/browser.py: drawn charts, the alert on the alerts page and the node's
  charts, the explorer, both themes; screenshots in
  $KELVIN_BUILD_DIR/ui-artifacts/);
- the PromQL expressions are declared once, in web/src/queries.js (the
  views build their queries from it); node imports that module and prints
  every entry (name, template, recording-rule form, display filter,
  variables) as JSON;
- substitutes real values taken from the server for the variables (a
  Hostname, one of its GPUs, its host target's labels, the firing alert's
  node, a utilisation threshold between the fleet's lowest and highest
  GPU, a histogram, counter and gauge kelvin serves itself, ...); the
  fleet filter runs both empty and as a cluster + two-node filter;
- checks each expression as the UI sends it (rule form or raw, display
  filter appended) parses and runs, as an instant and as a range query,
  and that it returns data without its display filter (for the recording
  rule form, the rule alone as well);
- proves the check can fail: one expression with a misspelt metric must be
  reported, by name.
One fleet and server serve both halves: the browser runs while the
expressions' history (their widest subquery) builds up.
Exit 1 naming every check that failed.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, os.path.join(HERE, "ui"))
import kelvintest as kt  # noqa: E402
import browser  # noqa: E402

NODES, GPUS = 4, 8
ALERT = "GPUXidError"
QUERIES = os.path.join(kt.SOURCE, "web", "src", "queries.js")

f = kt.Failures()
tmp = tempfile.mkdtemp(prefix="kelvin-ui-")


class Training:
    """A training job's metrics as the agent would pass them on: a step-time
    histogram, a token counter and a loss gauge, moving with every scrape
    (the simulated fleet sends no application metrics)."""

    def __init__(self):
        import http.server
        import threading
        state = {"n": 0}

        class H(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802
                state["n"] += 1
                n = state["n"]
                lines = ["# TYPE ui_test_step_seconds histogram"]
                for le, share in (("0.1", 0.2), ("0.5", 0.7), ("1", 0.95), ("+Inf", 1.0)):
                    lines.append(f'ui_test_step_seconds_bucket{{le="{le}"}} {int(n * 10 * share)}')
                lines += [f"ui_test_step_seconds_sum {n * 3.1}", f"ui_test_step_seconds_count {n * 10}",
                          "# TYPE ui_test_tokens_total counter", f"ui_test_tokens_total {n * 4096}",
                          "# TYPE ui_test_loss gauge", f"ui_test_loss {2.0 / (1 + n / 10):.4f}", ""]
                body = "\n".join(lines).encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *a):
                pass
        self.srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.port = self.srv.server_address[1]
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()

    def close(self):
        self.srv.shutdown()
        self.srv.server_close()


train = None


def entries():
    """[{name, expr, rule, filter, vars}] from web/src/queries.js."""
    node = shutil.which("node")
    if not node:
        raise AssertionError("node is missing (scripts/deps build)")
    mod = os.path.join(tmp, "queries.mjs")  # .mjs: an ES module without a package.json
    shutil.copy(QUERIES, mod)
    script = ("const m = await import(process.argv[1]);"
              "console.log(JSON.stringify(m.all().map(([name, e]) => ({name, expr: e.expr, rule: e.rule || null,"
              " filter: e.filter || '', vars: e.vars}))));")
    p = subprocess.run([node, "--input-type=module", "-e", script, "file://" + mod], capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        raise AssertionError(f"node could not read {QUERIES}: {p.stderr[-1500:]}")
    return json.loads(p.stdout)


def fill(tmpl, vars_):
    """queries.js's fill(): $name or ${name}; a missing variable is an error."""

    def sub(m):
        name = m.group(1) or m.group(2)
        if name not in vars_:
            raise KeyError(f"variable ${name} has no test value")
        return str(vars_[name])
    return re.sub(r"\$(?:\{([A-Za-z_]\w*)\}|([A-Za-z_]\w*))", sub, tmpl)


def api(base, path, **params):
    st, _, body = kt.http(base + "/api/v1/" + path, method="POST", data=urllib.parse.urlencode(params).encode(),
                          headers={"Content-Type": "application/x-www-form-urlencoded"}, timeout=30)
    try:
        j = json.loads(body)
    except ValueError:
        return None, f"HTTP {st}: not JSON: {body[:200]!r}"
    if j.get("status") != "success":
        return None, f"HTTP {st}: {j.get('errorType')}: {j.get('error')}"
    return j["data"], None


def has_data(d):
    if d is None:
        return False
    if d["resultType"] == "scalar":
        return True
    return len(d["result"]) > 0


def check_expr(base, label, q, need_data):
    """Problems with one expression: [] when it parses, runs as an instant and
    a range query and (need_data) returns data in both."""
    now = time.time()
    probs = []
    d, err = api(base, "query", query=q, time=f"{now:.3f}")
    if err:
        return [f"{label}: instant query failed: {err}\n      {q}"]
    if need_data and not has_data(d):
        probs.append(f"{label}: instant query returned no data\n      {q}")
    d, err = api(base, "query_range", query=q, start=f"{now - 120:.3f}", end=f"{now:.3f}", step="10")
    if err:
        probs.append(f"{label}: range query failed: {err}\n      {q}")
    elif need_data and not has_data(d):
        probs.append(f"{label}: range query returned no data\n      {q}")
    return probs


def check_entry(base, e, vars_):
    """Every form of one entry with one set of variables (the recording
    rule forms only where the UI sends them: no node filter)."""
    probs = []
    try:
        raw = fill(e["expr"], vars_)
        rule = fill(e["rule"], vars_) if e["rule"] else None
    except KeyError as x:
        return [f"{e['name']}: {x.args[0]}"]
    probs += check_expr(base, e["name"], raw, True)
    if e["filter"]:
        probs += check_expr(base, e["name"] + " (display filter)", raw + e["filter"], False)
    if rule and "Hostname" not in vars_.get("f", ""):
        probs += check_expr(base, e["name"] + " (recording rule)", rule, True)
        probs += check_expr(base, e["name"] + " (rule or raw)", f"{rule} or {raw}" + e["filter"], True)
    return probs


try:
    browser.need_tools()
    qs = entries()
    f.check(len(qs) >= 60, f"only {len(qs)} expressions read from {QUERIES}")
    train = Training()
    sport = kt.free_port()
    _, _, sd = kt.start_fleet(tmp, NODES, GPUS, "xid-storm", 3)
    rules = os.path.join(kt.SOURCE, "rules", "gpu.rules.yml")
    conf = os.path.join(tmp, "kelvin.yml")
    with open(conf, "w") as fh:
        fh.write("global:\n  scrape_interval: 2s\n  scrape_timeout: 2s\n  evaluation_interval: 2s\n"
                 f"rule_files: ['{rules}']\n"
                 "scrape_configs:\n"
                 "  - job_name: gpu\n"
                 f"    file_sd_configs: [{{files: ['{sd}'], refresh_interval: 1s}}]\n"
                 "  - job_name: train\n"
                 f"    static_configs: [{{targets: ['127.0.0.1:{train.port}']}}]\n"
                 "  - job_name: kelvin\n"
                 f"    static_configs: [{{targets: ['127.0.0.1:{sport}']}}]\n")
    srv = kt.start([kt.KELVIN, "server", f"--config.file={conf}", f"--web.listen-address=127.0.0.1:{sport}",
                    f"--storage.tsdb.path={os.path.join(tmp, 'data')}"], log=os.path.join(tmp, "server.log"))
    base = f"http://127.0.0.1:{sport}"
    kt.wait_http(base + "/-/ready", proc=srv)
    t_server = time.time()

    browser.check_serving(f, base)

    # ---- wait: the alert firing on a node, every recording rule the UI names answering
    rule_names = sorted({n for e in qs if e["rule"] for n in re.findall(r"\b[a-z_]+:[A-Za-z0-9_]+:[a-z0-9_]+\b", e["rule"])})
    f.check(len(rule_names) >= 5, f"recording rules named by queries.js: {rule_names}")
    deadline = time.time() + 300
    alert = None
    missing = rule_names
    while time.time() < deadline:
        st, _, ab = kt.http(base + "/api/v1/alerts")
        d = json.loads(ab)["data"] if st == 200 else None
        alert = next((a for a in (d or {}).get("alerts", []) if a["state"] == "firing"
                      and a["labels"].get("alertname") == ALERT and a["labels"].get("Hostname")), None)
        missing = [r for r in rule_names if not has_data(api(base, "query", query=r)[0])]
        if alert and not missing:
            break
        time.sleep(1)
    if not alert:
        raise AssertionError(f"{ALERT} did not fire on a node within 300 s (recording rules without data: {missing})")
    if missing:
        raise AssertionError(f"recording rules without data after 300 s: {missing}")

    # ---- every page in the browser
    time.sleep(5)  # a few more samples so charts have lines
    browser.run_pages(f, base, NODES * GPUS, ALERT)

    # ---- the expressions: more than the widest rate window ($rate = 60s)
    # of samples, and three points of the projections' [30m:1m] subqueries
    time.sleep(max(0.0, t_server + 190 - time.time()))

    # ---- real values for the variables
    d, _ = api(base, "query", query="group by (Hostname, gpu, job) (DCGM_FI_DEV_GPU_TEMP)")
    hosts = sorted({s["metric"]["Hostname"] for s in d["result"]})
    f.check(len(hosts) == NODES, f"{len(hosts)} nodes in storage, want {NODES}")
    host = alert["labels"].get("Hostname", hosts[0])
    job = d["result"][0]["metric"]["job"]
    d, _ = api(base, "query", query=f'DCGM_FI_DEV_GPU_TEMP{{Hostname="{host}",gpu="0"}}')
    series = d["result"][0]["metric"]
    st, _, tb = kt.http(base + "/api/v1/targets")
    target = next(t["labels"] for t in json.loads(tb)["data"]["activeTargets"]
                  if t["labels"] and all(series.get(k) == v for k, v in t["labels"].items()))
    host_sel = ",".join(f'{k}="{v}"' for k, v in sorted(target.items()))
    d, _ = api(base, "query", query="min(DCGM_FI_DEV_GPU_UTIL)")
    lo = float(d["result"][0]["value"][1])
    d, _ = api(base, "query", query="max(DCGM_FI_DEV_GPU_UTIL)")
    hi = float(d["result"][0]["value"][1])
    f.check(hi > lo, f"the fleet's GPUs all have utilisation {lo}: no threshold splits them")
    base_vars = {
        "c": f'job="{job}"', "node": f'Hostname="{host}"', "sel": f'Hostname="{host}",gpu="0"', "host": host_sel,
        "alerts": f'alertstate="firing",Hostname="{host}"', "rate": "60s", "step": "60s", "hz": "600",
        "idle": f"{(lo + hi) / 2:.3f}", "by": "command", "q": "0.9", "job": 'job="train"',
    }
    # the application metric variable: the training job's histogram, counter
    # and gauge
    metric_for = {"jobs.quantile": "ui_test_step_seconds", "jobs.counter": "ui_test_tokens_total", "jobs.gauge": "ui_test_loss"}
    fleet_filters = ["", f'job="{job}",Hostname=~"{hosts[0]}|{hosts[1]}"']

    checked = 0
    for e in qs:
        vs = [dict(base_vars, f=x) for x in (fleet_filters if "f" in e["vars"] else [None])]
        for v in vs:
            if v["f"] is None:
                del v["f"]
            if e["name"] in metric_for:
                v["metric"] = metric_for[e["name"]]
            for p in check_entry(base, e, v):
                f.check(False, p + (f"   [f={v['f']!r}]" if "f" in v else ""))
            checked += 1

    # ---- the check can fail: a misspelt metric is reported by name
    bad = dict(next(e for e in qs if e["name"] == "fleet.chart.utilMax"))
    bad["expr"] = bad["expr"].replace("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_GPU_UTLI")
    bad["name"] = "misspelt.utilMax"
    probs = check_entry(base, bad, dict(base_vars, f=""))
    f.check(any(p.startswith("misspelt.utilMax") and "no data" in p for p in probs),
            f"a misspelt metric was not reported: {probs}")
    bad = dict(bad, expr="max(DCGM_FI_DEV_GPU_UTIL{$f}", name="unbalanced")
    probs = check_entry(base, bad, dict(base_vars, f=""))
    f.check(any(p.startswith("unbalanced") and "bad_data" in p for p in probs), f"a syntax error was not reported: {probs}")
    print(f"ui: {len(qs)} expressions of web/src/queries.js, {checked} variable sets, checked on kelvin")
finally:
    if train:
        train.close()
    kt.stop_all()
    shutil.rmtree(tmp, ignore_errors=True)
    f.finish("ui")
