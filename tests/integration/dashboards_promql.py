#!/usr/bin/python3
"""Every PromQL expression of Kelvin's Grafana dashboards (dashboards/*.json)
and of NVIDIA's dcgm-exporter dashboard runs on `kelvin server` and returns
data, with the variables resolved and interpolated as Grafana does.

The stack (loopback only, ports picked at run time, 1 s scrapes and rule
evaluations, the GPU alert pack rules/gpu.rules.yml):
- `kelvin sim fleet`: 2 nodes x 4 GPUs with an XID storm (job kelvin-agent),
  and 1 node x 4 GPUs whose ECC errors climb (a second "cluster", job
  gpu-ecc, its Hostname relabelled ecc-node-0); file_sd, instance set from
  the node label as one agent per node would have it;
- `kelvin agent` with 2 simulated GPUs in an XID storm (the training node:
  StatsD train.* metrics from python3-statsd and prometheus_client pushes of
  inference metrics), and one with 2 idle GPUs (for the idle-GPU panels).
It waits (bounded) until the fleet's faults happened: XID series, a
critical alert firing, ECC errors rising, app metrics with enough samples.

Then, for every dashboard:
- the JSON is valid, uid and title stable and unique, schemaVersion >= 37, a
  `datasource` variable of type prometheus, every panel, target, query
  variable and annotation uses it; panel ids unique; every variable a query
  refers to exists; rate/irate/increase windows are $__rate_interval (or
  $__range); no panel asks for more points than its width in pixels (1,920
  px screen) over 1 h to 30 d, with Grafana's interval rounding and a 15 s
  scrape interval;
  dashboard links between the four (tag kelvin) and a drill-down from the
  overview to the node dashboard;
- every template variable's query runs (label_values through /api/v1/series
  and /api/v1/label/<l>/values, which must agree; query_result) and has
  values;
- every panel target and annotation expression, interpolated (multi-value
  variables as an escaped alternation of the values their own query found;
  include-All variables also with their allValue; custom variables with
  each of their options; $__rate_interval, $__interval, $__range as
  Grafana computes them), runs as a range query over the last 5 minutes
  and as an instant query: each must succeed and return data.
NVIDIA's dcgm-exporter dashboard: its 8 expressions and 2 variable queries
(strings below, from the repository at a pinned commit) the same way.
A self-check first proves the checker fails on a misspelt metric name, a
syntax error and an undefined variable. Every process must end with status
0 and no sanitizer report in its log.
"""
import glob
import json
import math
import os
import re
import shutil
import socket
import sys
import tempfile
import time
import traceback
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import grafana_model as gm  # noqa: E402
import kelvintest as kt  # noqa: E402

import statsd  # noqa: E402  (Debian's python3-statsd)
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, push_to_gateway  # noqa: E402

SCRAPE_MS = 1000
RANGE_S = 300
WAIT_S = 170
DASH_DIR = os.path.join(kt.SOURCE, "dashboards")
RULES = os.path.join(kt.SOURCE, "rules", "gpu.rules.yml")
EXPECTED = {"overview.json": ("kelvin-overview", "Kelvin / GPU fleet overview"),
            "node.json": ("kelvin-node", "Kelvin / Node"),
            "training.json": ("kelvin-training", "Kelvin / Training and inference"),
            "capacity.json": ("kelvin-capacity", "Kelvin / Capacity")}
GPUS = 2 * 4 + 4 + 2 + 2

# NVIDIA's dcgm-exporter dashboard, grafana/dcgm-exporter-dashboard.json of
# https://github.com/NVIDIA/dcgm-exporter at commit
# 068798b0a1cb23d7764fa30f6f305d322ede87e2 (Grafana 9.1.5, schemaVersion 37):
# its template variables and its panels' expressions, copied as strings
# (the dashboard itself is not copied). Both variables are multi-value with
# include All.
DCGM_EXPORTER_VARIABLES = [
    ("Hostname", "label_values(DCGM_FI_DEV_FB_FREE, Hostname)"),
    ("gpu", 'label_values(DCGM_FI_DEV_FB_FREE{Hostname=~"$Hostname"}, gpu)'),
]
DCGM_EXPORTER_PANELS = [
    ("GPU Temperature", 'max(DCGM_FI_DEV_GPU_TEMP{Hostname=~"$Hostname", gpu=~"$gpu"}) by (Hostname, gpu, uuid)'),
    ("GPU Avg. Temp", 'avg(DCGM_FI_DEV_GPU_TEMP{Hostname=~"$Hostname", gpu=~"$gpu"})'),
    ("GPU Power Usage", 'max(DCGM_FI_DEV_POWER_USAGE{Hostname=~"$Hostname", gpu=~"$gpu"}) by (Hostname, gpu, uuid)'),
    ("GPU Power Total", 'sum(max(DCGM_FI_DEV_POWER_USAGE{Hostname=~"$Hostname", gpu=~"$gpu"}) by (gpu))'),
    ("GPU SM Clocks",
     'max(DCGM_FI_DEV_SM_CLOCK{Hostname=~"$Hostname", gpu=~"$gpu"} * 1000000) by (Hostname, UUID, gpu)'),
    ("GPU Utilization", 'max(DCGM_FI_PROF_GR_ENGINE_ACTIVE{Hostname=~"$Hostname", gpu=~"$gpu"}) '
                        'by (Hostname, gpu, GPU_I_ID, GPU_I_PROFILE)'),
    ("Tensor Core Utilization", 'max(DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{Hostname=~"$Hostname", gpu=~"$gpu"}) '
                                'by (Hostname, gpu, GPU_I_ID, GPU_I_PROFILE)'),
    ("GPU Framebuffer Mem Used", 'max(DCGM_FI_DEV_FB_USED{Hostname=~"$Hostname", gpu=~"$gpu"}) '
                                 'by (Hostname, gpu, GPU_I_ID, GPU_I_PROFILE)'),
]

RATE_WINDOW = re.compile(r"\b(rate|irate|increase)\s*\(([^()\[\]]*)\[([^\]]*)\]")


def dcgm_exporter_dashboard():
    """The dcgm-exporter dashboard's queries in a minimal dashboard model."""
    ds = {"type": "prometheus", "uid": "$datasource"}
    return {"uid": "Oxed_c6Wz", "title": "NVIDIA DCGM Exporter Dashboard",
            "templating": {"list": [{"name": "datasource", "type": "datasource", "query": "prometheus"}] +
                           [{"name": n, "type": "query", "datasource": ds, "multi": True, "includeAll": True,
                             "query": {"query": q, "refId": "StandardVariableQuery"}}
                            for n, q in DCGM_EXPORTER_VARIABLES]},
            "panels": [{"id": i + 1, "title": t, "type": "timeseries", "datasource": ds,
                        "gridPos": {"x": 0, "y": i * 8, "w": 24, "h": 8},
                        "targets": [{"datasource": ds, "expr": e, "refId": "A"}]}
                       for i, (t, e) in enumerate(DCGM_EXPORTER_PANELS)]}


# ---- the API -------------------------------------------------------------------

class Api:
    """kelvin server's HTTP API as Grafana calls it (POST form bodies)."""

    def __init__(self, url):
        self.url = url

    def _answer(self, st, body, what):
        try:
            d = json.loads(body)
        except ValueError:
            raise AssertionError(f"{what}: HTTP {st}, not JSON: {body[:200]!r}") from None
        if st != 200 or d.get("status") != "success":
            raise AssertionError(f"{what}: HTTP {st} {d.get('errorType')}: {d.get('error')}")
        return d["data"]

    def get(self, path, params=()):
        q = urllib.parse.urlencode(list(params))
        st, _, body = kt.http(self.url + path + ("?" + q if q else ""), timeout=20)
        return self._answer(st, body, f"GET {path}")

    def post(self, path, params=()):
        st, _, body = kt.http(self.url + path, method="POST", data=urllib.parse.urlencode(list(params)).encode(),
                              headers={"Content-Type": "application/x-www-form-urlencoded",
                                       "X-Grafana-Org-Id": "1"}, timeout=30)
        return self._answer(st, body, f"POST {path}")

    def value(self, expr):
        """The instant vector of expr as {frozenset(labels): value}; {} on error."""
        try:
            d = self.post("/api/v1/query", [("query", expr), ("time", f"{time.time():.3f}")])
        except AssertionError:
            return {}
        return {frozenset(s["metric"].items()): float(s["value"][1]) for s in d.get("result") or []}


# ---- static checks of a dashboard ---------------------------------------------

def is_ds_var(ds):
    if isinstance(ds, str):
        return ds in ("$datasource", "${datasource}")
    return isinstance(ds, dict) and ds.get("uid") in ("$datasource", "${datasource}") and \
        ds.get("type", "prometheus") == "prometheus"


def check_static(f, name, d):
    where = name
    f.check(isinstance(d.get("uid"), str) and 0 < len(d["uid"]) <= 40, f"{where}: uid missing or too long")
    f.check(isinstance(d.get("title"), str) and d["title"], f"{where}: title missing")
    f.check(isinstance(d.get("schemaVersion"), int) and d["schemaVersion"] >= 37,
            f"{where}: schemaVersion {d.get('schemaVersion')} (Grafana 9/10 need 37 or more)")
    f.check(d.get("id") is None, f"{where}: id must be null so the dashboard imports anywhere")
    dsv = [v for v in gm.variables(d) if v.get("name") == "datasource"]
    f.check(len(dsv) == 1 and dsv[0].get("type") == "datasource" and dsv[0].get("query") == "prometheus",
            f"{where}: needs one variable 'datasource' of type datasource, query prometheus")
    names = [v.get("name") for v in gm.variables(d)]
    f.check(len(names) == len(set(names)), f"{where}: duplicate variable names {names}")
    for v in gm.variables(d):
        if v.get("type") == "query":
            f.check(is_ds_var(v.get("datasource")), f"{where}: variable {v.get('name')!r} does not use $datasource")
    ids = []
    for p in gm.walk_panels(d.get("panels")):
        ids.append(p.get("id"))
        title = p.get("title")
        if p.get("type") == "row":
            f.check(not p.get("targets"), f"{where}: row {title!r} has targets")
            continue
        f.check(is_ds_var(p.get("datasource")), f"{where}: panel {title!r} datasource is {p.get('datasource')!r}, "
                                                f"not the datasource variable")
        targets = p.get("targets") or []
        f.check(targets, f"{where}: panel {title!r} has no targets")
        refs = [t.get("refId") for t in targets]
        f.check(len(refs) == len(set(refs)), f"{where}: panel {title!r} repeats refIds {refs}")
        for t in targets:
            f.check("datasource" not in t or is_ds_var(t["datasource"]),
                    f"{where}: panel {title!r} target {t.get('refId')} datasource {t.get('datasource')!r}")
            f.check(isinstance(t.get("expr"), str) and t["expr"].strip(),
                    f"{where}: panel {title!r} target {t.get('refId')} without an expression")
        mdp = p.get("maxDataPoints")
        if mdp is not None:
            f.check(isinstance(mdp, int) and 0 < mdp <= gm.panel_width_px(p),
                    f"{where}: panel {title!r} maxDataPoints {mdp} exceeds its width ({gm.panel_width_px(p)} px)")
        # points per series for long ranges, with Grafana's interval
        # arithmetic and the provisioned scrape interval (15 s)
        for rng in (3600, 6 * 3600, 86400, 7 * 86400, 30 * 86400):
            for t in targets:
                interval, _, _ = gm.panel_intervals(p, t, rng, 15000)
                pts = rng * 1000 // interval + 1
                f.check(pts <= gm.panel_width_px(p), f"{where}: panel {title!r} target {t.get('refId')}: {pts} "
                        f"points over {rng} s, more than its {gm.panel_width_px(p)} pixels")
        for src in [p.get("interval")] + [t.get("interval") for t in targets]:
            if src:
                f.check(gm.parse_duration_ms(src) is not None, f"{where}: panel {title!r} interval {src!r}")
    f.check(len(ids) == len(set(ids)) and None not in ids, f"{where}: panel ids missing or repeated")
    for a in (d.get("annotations") or {}).get("list") or []:
        if not a.get("builtIn"):
            f.check(is_ds_var(a.get("datasource")), f"{where}: annotation {a.get('name')!r} datasource")
    defined = set(names) | gm.BUILTINS
    texts = [(q.where, q.expr) for q in gm.queries(d)] + \
            [(f"variable {v.get('name')!r}", gm.variable_query(v)) for v in gm.variables(d) if v.get("type") == "query"]
    for w, text in texts:
        undefined = sorted(set(gm.referenced(text)) - defined)
        f.check(not undefined, f"{where}: {w} refers to undefined variables {undefined}")
        for m in RATE_WINDOW.finditer(text):
            f.check(m.group(3) in ("$__rate_interval", "${__rate_interval}", "$__range", "${__range}"),
                    f"{where}: {w}: {m.group(1)}() over [{m.group(3)}], not [$__rate_interval]: {text!r}")


def check_links(f, dashes):
    for name, d in dashes.items():
        f.check("kelvin" in (d.get("tags") or []), f"{name}: tag 'kelvin' missing (dashboard links use it)")
        f.check(any(l.get("type") == "dashboards" and "kelvin" in (l.get("tags") or []) and l.get("includeVars")
                    and l.get("keepTime") for l in d.get("links") or []),
                f"{name}: no dashboard link to the other Kelvin dashboards (type dashboards, tag kelvin, "
                f"includeVars and keepTime)")
    ov = dashes.get("overview.json")
    if ov:
        urls = [l.get("url", "") for p in gm.walk_panels(ov.get("panels"))
                for l in ((p.get("fieldConfig") or {}).get("defaults") or {}).get("links") or []]
        f.check(any("/d/kelvin-node/" in u and "var-node=" in u for u in urls),
                "overview.json: no drill-down link to the node dashboard (/d/kelvin-node/ with var-node)")
        names = {v.get("name") for v in gm.variables(ov)}
        node = [v for v in gm.variables(ov) if v.get("name") == "node"]
        f.check("job" in names and node and node[0].get("multi") and "Hostname" in gm.variable_query(node[0]),
                "overview.json: needs variables job and node (multi-select, Hostname)")


def check_provisioning(f):
    ds = os.path.join(DASH_DIR, "provisioning", "datasources", "kelvin.yml")
    db = os.path.join(DASH_DIR, "provisioning", "dashboards", "kelvin.yml")
    for path, needles in ((ds, ["apiVersion: 1", "name: Kelvin", "type: prometheus", "url: http://localhost:9090"]),
                          (db, ["apiVersion: 1", "type: file", "path: "])):
        try:
            with open(path, encoding="utf-8") as fh:
                lines = [line.split("#", 1)[0].strip() for line in fh]
        except OSError as e:
            f.check(False, f"{path}: {e}")
            continue
        for n in needles:
            f.check(any(line.lstrip("- ").startswith(n) for line in lines), f"{path}: no line {n!r}")


# ---- running the queries --------------------------------------------------------

class Checker:
    """Runs a dashboard's queries against the API; collects what failed."""

    def __init__(self, api):
        self.api = api

    def contexts(self, d, ctx, text):
        """The interpolations of one expression: every referenced variable
        with all its values (include-All ones also with allValue), and each
        option of each referenced custom variable in turn."""
        refs = [n for n in dict.fromkeys(gm.referenced(text)) if n in ctx]
        out = [("all values", ctx, False)]
        if any(ctx[n][0].all_value is not None for n in refs):
            out.append(("All (allValue)", ctx, True))
        for n in refs:
            var, chosen = ctx[n]
            custom = any(v.get("name") == n and v.get("type") == "custom" for v in gm.variables(d))
            if custom and not var.regex_fmt:
                for val in var.values:
                    if [val] != chosen:
                        c = dict(ctx)
                        c[n] = (var, [val])
                        out.append((f"${n}={val}", c, False))
        return out

    def run(self, label, d, now):
        """[(problem)] for every failing query of dashboard d, and the
        number of queries run."""
        problems = []
        start, end = now - RANGE_S, now
        ctx = gm.resolve_variables(self.api, d, start, end, SCRAPE_MS, problems, label)
        n = 0
        for q in gm.queries(d):
            for how, c, use_all in self.contexts(d, ctx, q.expr):
                b, interval_ms = gm.builtins_for(q.panel, q.target, start, end, SCRAPE_MS)
                expr = gm.interpolate(q.expr, c, b, use_all)
                left = [x for x in gm.referenced(expr)]
                if left:
                    problems.append(f"{label}: {q.where}: unresolved variables {left} in {q.expr!r}")
                    continue
                step = interval_ms / 1000
                s = math.floor(start / step) * step
                for kind, path, params in (
                        ("range", "/api/v1/query_range", [("query", expr), ("start", f"{s:.3f}"), ("end", f"{end:.3f}"),
                                                          ("step", f"{step:g}")]),
                        ("instant", "/api/v1/query", [("query", expr), ("time", f"{end:.3f}")])):
                    n += 1
                    try:
                        data = self.api.post(path, params)
                    except AssertionError as e:
                        problems.append(f"{label}: {q.where} ({how}): {kind} query failed: {e}\n      {expr}")
                        continue
                    res = data.get("result")
                    empty = res is None or (isinstance(res, list) and len(res) == 0)
                    if data.get("resultType") == "matrix" and not empty:
                        empty = all(not s.get("values") for s in res)
                    if empty:
                        problems.append(f"{label}: {q.where} ({how}): {kind} query returned no data\n      {expr}")
                    elif kind == "range" and data.get("resultType") == "matrix":
                        most = max(len(s.get("values") or []) for s in res)
                        px = gm.panel_width_px(q.panel)
                        if most > px:
                            problems.append(f"{label}: {q.where}: {most} points for a panel {px} pixels wide")
        return problems, n


def self_check(f, checker, now):
    """The checker must fail on a misspelt metric, a syntax error and an undefined variable."""
    ds = {"type": "prometheus", "uid": "${datasource}"}
    bad = {"uid": "selfcheck", "title": "self-check", "schemaVersion": 38,
           "templating": {"list": [{"name": "datasource", "type": "datasource", "query": "prometheus"},
                                   {"name": "node", "type": "query", "datasource": ds, "multi": True,
                                    "query": {"query": "label_values(DCGM_FI_DEV_GPU_TEMP, Hostname)"}}]},
           "panels": [{"id": 1, "type": "timeseries", "title": "typo", "datasource": ds,
                       "targets": [{"refId": "A", "expr": 'DCGM_FI_DEV_GPU_TEMPP{Hostname=~"$node"}'}]},
                      {"id": 2, "type": "timeseries", "title": "syntax", "datasource": ds,
                       "targets": [{"refId": "A", "expr": "sum by (gpu (DCGM_FI_DEV_GPU_TEMP)"}]},
                      {"id": 3, "type": "timeseries", "title": "undefined", "datasource": ds,
                       "targets": [{"refId": "A", "expr": 'DCGM_FI_DEV_GPU_TEMP{Hostname=~"$nodes"}'}]},
                      {"id": 4, "type": "timeseries", "title": "good", "datasource": ds,
                       "targets": [{"refId": "A", "expr": 'avg(rate(DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION'
                                                          '{Hostname=~"$node"}[$__rate_interval]))'}]}]}
    problems, _ = checker.run("self-check", bad, now)
    text = "\n".join(problems)
    f.check(sum("'typo'" in p and "no data" in p for p in problems) == 2,
            f"self-check: a misspelt metric must fail as 'no data' (range and instant): {text}")
    f.check(sum("'syntax'" in p and "bad_data" in p for p in problems) == 2,
            f"self-check: a syntax error must fail with bad_data: {text}")
    f.check(any("'undefined'" in p and "nodes" in p for p in problems),
            f"self-check: an undefined variable must fail: {text}")
    f.check(not any("'good'" in p for p in problems), f"self-check: a good query failed: {text}")
    sf = kt.Failures()
    check_static(sf, "self-check", bad)
    f.check(any("undefined variables ['nodes']" in m for m in sf.items),
            f"self-check: the static check must name the undefined variable: {sf.items}")


# ---- the stack -------------------------------------------------------------------

def write_config(path, sd_a, sd_b, agents):
    targets = ", ".join(f"'{a}'" for a in agents)
    with open(path, "w") as fh:
        fh.write(f"""global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
rule_files:
  - '{RULES}'
scrape_configs:
  - job_name: kelvin-agent
    static_configs:
      - targets: [{targets}]
    file_sd_configs:
      - files: ['{sd_a}']
        refresh_interval: 1s
    relabel_configs:
      - source_labels: [node]
        regex: (.+)
        target_label: instance
  - job_name: gpu-ecc
    file_sd_configs:
      - files: ['{sd_b}']
        refresh_interval: 1s
    relabel_configs:
      - source_labels: [node]
        regex: (.+)
        target_label: instance
        replacement: ecc-$1
    metric_relabel_configs:
      - source_labels: [Hostname]
        regex: (.+)
        target_label: Hostname
        replacement: ecc-$1
""")


class AppMetrics:
    """A training job's StatsD metrics and an inference server's pushes to the training node's agent."""

    def __init__(self, udp_port, agent_url):
        self.c = statsd.StatsClient("127.0.0.1", udp_port, prefix="train")
        self.gw = agent_url.replace("http://", "")
        self.reg = CollectorRegistry()
        self.req = Counter("infer_requests", "Requests served.", registry=self.reg)
        self.tok = Counter("infer_tokens", "Tokens generated.", registry=self.reg)
        self.lat = Histogram("infer_request_latency_seconds", "Request latency.", registry=self.reg,
                             buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5))
        self.eval = Gauge("train_eval_loss", "Evaluation loss.", registry=self.reg)
        self.i = 0
        self.pushes = 0
        self.last_error = None

    def tick(self):
        i = self.i
        self.i += 1
        self.c.gauge("loss", round(2.0 * math.exp(-i / 40) + 0.3 + 0.02 * math.sin(i), 4))
        for k in range(3):
            self.c.timing("step_time", 180 + 40 * math.sin(i + k) + 15 * k)
        self.c.incr("steps", 3)
        self.c.incr("tokens", 3 * 8192)
        self.c.incr("samples", 3 * 16)
        self.req.inc(5 + i % 3)
        self.tok.inc(400 + 10 * (i % 7))
        for k in range(5):
            self.lat.observe(0.08 + 0.05 * k + 0.01 * (i % 4))
        self.eval.set(round(2.1 * math.exp(-i / 40) + 0.35, 4))
        try:
            push_to_gateway(self.gw, job="llm-serve", registry=self.reg, timeout=5)
            self.pushes += 1
        except Exception as e:  # noqa: BLE001 - counted; the readiness check then fails with the reason
            self.last_error = e


def wait_ready(api, app, deadline):
    """Waits until the fixture's faults and data are there; returns what was missing."""
    conds = {
        f"{GPUS} GPUs scraped": lambda: len(api.value("DCGM_FI_DEV_GPU_TEMP")) == GPUS,
        "recording rules": lambda: bool(api.value("job:DCGM_FI_DEV_GPU_UTIL:avg")) and
        bool(api.value("instance_gpu:DCGM_FI_DEV_MEMORY_TEMP:deriv5m")),
        "XID series": lambda: bool(api.value("kelvin_gpu_xid_errors_total")),
        "a critical alert firing": lambda: bool(api.value('ALERTS{alertstate="firing", severity="critical"}')),
        "ECC errors rising": lambda: bool(api.value("increase(kelvin_gpu_ecc_volatile_errors_total[5m]) > 0")),
        "StatsD metrics (20 s)": lambda: bool(api.value("count_over_time(train_loss[5m]) >= 20")),
        "pushed metrics (20 s)": lambda: bool(api.value("count_over_time(infer_requests_total[5m]) >= 20")),
        "pushed metrics keep the node's instance": lambda: bool(api.value(
            'infer_requests_total{exported_job="llm-serve", instance=~"127.0.0.1:.*"}')),
    }
    missing = list(conds)
    while time.time() < deadline:
        app.tick()
        missing = [k for k, fn in conds.items() if not fn()]
        if not missing:
            return []
        time.sleep(1)
    return missing


def main():
    f = kt.Failures()
    tmp = tempfile.mkdtemp(prefix="kelvin-dash-")
    try:
        files = sorted(glob.glob(os.path.join(DASH_DIR, "*.json")))
        dashes = {}
        for path in files:
            try:
                dashes[os.path.basename(path)] = gm.load(path)
            except ValueError as e:
                f.check(False, f"{path}: not valid JSON: {e}")
        f.check(set(dashes) >= set(EXPECTED), f"dashboards missing: {sorted(set(EXPECTED) - set(dashes))}")
        for name, (uid, title) in EXPECTED.items():
            if name in dashes:
                got = (dashes[name].get("uid"), dashes[name].get("title"))
                f.check(got == (uid, title), f"{name}: uid and title {got}, want {(uid, title)} (links and "
                                             f"bookmarks use them: keep them stable)")
        uids = [d.get("uid") for d in dashes.values()]
        titles = [d.get("title") for d in dashes.values()]
        f.check(len(set(uids)) == len(uids) and len(set(titles)) == len(titles), f"uids/titles repeat: {uids} {titles}")
        for name, d in dashes.items():
            check_static(f, name, d)
        check_links(f, dashes)
        check_provisioning(f)

        # the stack
        env = dict(os.environ)
        _, _, sd_a = kt.start_fleet(tmp, 2, 4, "xid-storm", 11, name="fleet-a")
        _, _, sd_b = kt.start_fleet(tmp, 1, 4, "ecc-degradation", 12, name="fleet-b")
        udp = kt.free_port(socket.SOCK_DGRAM)
        _, train_url = kt.start_agent("--gpu.simulate=xid-storm", "--gpu.simulate.count=2",
                                      f"--statsd.listen-udp=127.0.0.1:{udp}",
                                      env=dict(env, NODE_NAME="gpu-train-0", KELVIN_SIM_ONSET="5"),
                                      log=os.path.join(tmp, "agent-train.log"))
        _, idle_url = kt.start_agent("--gpu.simulate=healthy", "--gpu.simulate.count=2",
                                     env=dict(env, NODE_NAME="gpu-idle-0", KELVIN_SIM_WORKLOAD="idle"),
                                     log=os.path.join(tmp, "agent-idle.log"))
        cfg = os.path.join(tmp, "kelvin.yml")
        write_config(cfg, sd_a, sd_b, [u.replace("http://", "") for u in (train_url, idle_url)])
        port = kt.free_port()
        ps = kt.start([kt.KELVIN, "server", f"--config.file={cfg}", f"--storage.tsdb.path={tmp}/data",
                       f"--web.listen-address=127.0.0.1:{port}"], log=os.path.join(tmp, "server.log"))
        url = f"http://127.0.0.1:{port}"
        kt.wait_http(url + "/-/ready", proc=ps)
        api = Api(url)
        app = AppMetrics(udp, train_url)
        t0 = time.time()
        missing = wait_ready(api, app, t0 + WAIT_S)
        f.check(not missing, f"the simulated fleet did not get there within {WAIT_S} s: {missing} "
                             f"(server log {tmp}/server.log)")
        print(f"dashboards_promql: fleet ready after {time.time() - t0:.0f} s, {app.pushes} pushes")

        checker = Checker(api)
        self_check(f, checker, time.time())
        boards = dict(dashes)
        boards["dcgm-exporter-dashboard.json (NVIDIA, 068798b0)"] = dcgm_exporter_dashboard()
        # A query whose data is still arriving (a window that needs a second
        # sample) gets a few more seconds; errors are final at once.
        pending = {}
        total = 0
        for name, d in boards.items():
            problems, n = checker.run(name, d, time.time())
            total += n
            if problems:
                pending[name] = problems
        end = time.time() + 20
        while pending and time.time() < end and all("no data" in p for ps_ in pending.values() for p in ps_):
            time.sleep(2)
            app.tick()
            for name in list(pending):
                problems, _ = checker.run(name, boards[name], time.time())
                if problems:
                    pending[name] = problems
                else:
                    del pending[name]
        for name, problems in pending.items():
            for p in problems:
                f.check(False, p)
        print(f"dashboards_promql: {total} queries from {len(boards)} dashboards "
              f"({sum(len(gm.queries(d)) for d in boards.values())} expressions)")
        # every process ends cleanly: no sanitizer report (tests also run under ASan and UBSan)
        for p in list(kt._procs):
            rc = kt.stop(p)
            log = getattr(p, "_log_path", None)
            text = open(log, errors="replace").read() if log and os.path.exists(log) else ""
            bad = [line for line in text.splitlines() if "Sanitizer" in line or "runtime error:" in line]
            f.check(rc == 0 and not bad, f"{' '.join(p.args[:2])} ended with {rc}: {bad[:3]} (log {log})")
    except Exception as e:  # noqa: BLE001 - an exception must fail the test, not vanish in finish()
        traceback.print_exc()
        f.check(False, f"unexpected error: {e!r}")
    finally:
        kt.stop_all()
        if not f.items:
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            print(f"dashboards_promql: logs in {tmp}")
        f.finish("dashboards_promql")


if __name__ == "__main__":
    main()
