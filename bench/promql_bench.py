#!/usr/bin/python3
"""bench/promql_bench.py -- the GPU fleet dashboard's PromQL range queries on
kelvin server, Prometheus 2.42 and VictoriaMetrics 1.79, on the same data in
the same run (issue #5's table).

Data (tests/lib/promql_data.py, Fleet): PROMQL_BENCH_NODES nodes (200), each
8 GPUs x 5 dcgm-exporter series (DCGM_FI_DEV_GPU_TEMP, _MEMORY_TEMP,
_GPU_UTIL, _FB_USED, _TOTAL_ENERGY_CONSUMPTION, with Hostname, gpu, UUID,
device, modelName, instance, job), node_cpu_seconds_total (16 CPUs x 4
modes), node_memory_MemAvailable_bytes and an 11-bucket latency histogram:
118 series a node, one sample every PROMQL_BENCH_INTERVAL seconds (30) for
PROMQL_BENCH_HOURS (24) from 2024-01-01T00:00Z, each node at its own
millisecond offset in the interval. It is generated in pieces of
PROMQL_BENCH_PIECE_HOURS (6: one block each) and, while the next piece is
generated, each piece goes
  - to Prometheus: promtool tsdb create-blocks-from openmetrics
    --max-block-duration=<piece>;
  - to kelvin: kelvin tsdb create-blocks-from openmetrics (the same file and
    flag);
  - to VictoriaMetrics: the same samples as text with ms timestamps, POSTed
    to /api/v1/import/prometheus; at the end /internal/force_flush, every
    row counted in (vm_rows_inserted_total) and merges settled.
Prometheus and kelvin are then started with --storage.tsdb.max-block-duration
equal to the piece, so neither compacts while it is measured (a real
Prometheus would hold 24 h as an 18 h and a 6 h block: close to the four 6 h
blocks here), --storage.tsdb.retention.time long enough for 2024, and
--query.max-samples=500000000 (2.42's default of 50M refuses the rate over
every CPU series: its matrix holds 12,800 x 5,761 points). VictoriaMetrics
runs with -search.disableCache (and nocache=1 on every query: no result
cache), -search.maxStalenessInterval=5m (Prometheus's lookback),
-search.latencyOffset=0s (the data lies in the past anyway).

Queries (the fleet dashboard), each a range query over the 24 h at a
PROMQL_BENCH_STEP (15 s) step, 5,761 points: see QUERIES.

Measurement: one server at a time (the others stopped), each started fresh
on its data. Per query: one warm-up run (its answer is kept to check the
servers agree; Prometheus and kelvin get stats=all there, for peakSamples),
then PROMQL_BENCH_RUNS (5) timed runs: request sent to the last byte of the
body read, on a keep-alive loopback connection, no compression. Timed runs
read the body into one reused 1 MiB buffer (Api(discard=True)): reading a
300 MB answer into a fresh bytes object cost this Python client ~2 s in page
faults on the benchmark VM (166 MB: 2.1 s with read(), 51 ms with readinto
into a reused buffer, against a server replaying a recorded answer), which
swamped both servers' own times on the large answers. Reported:
the median latency per server and the ratios kelvin/VM, kelvin/Prometheus
(and VM/Prometheus); peak memory per query: /proc/PID/clear_refs "5" resets
VmHWM to VmRSS before the timed runs, and VmHWM - VmRSS(before) after them
(plus the absolute VmHWM); the answer's size; 2.42's peakSamples.
Agreement: against Prometheus's answer, the series label sets and, on
common points, the share of values within 1e-9 relative (kelvin must match
exactly: 100%) and within 1% (VictoriaMetrics's MetricsQL differs on
purpose, e.g. rate without extrapolation, so it is shown, not enforced).

Goal (issue #5): kelvin <= 0.5 x VictoriaMetrics on every query.
BENCH_ONLY: "" or "promql" runs it (anything else runs nothing here).
Knobs (env): PROMQL_BENCH_NODES (200), PROMQL_BENCH_INTERVAL (30),
PROMQL_BENCH_HOURS (24), PROMQL_BENCH_PIECE_HOURS (6; 2 or 6), PROMQL_BENCH_RUNS
(5), PROMQL_BENCH_STEP (15), PROMQL_BENCH_SERVERS (prometheus,vm,kelvin),
PROMQL_BENCH_QUERIES (a regular expression over the query names),
PROMQL_BENCH_KEEP (set: keep the stores' data, for profiling one
afterwards), PROMQL_BENCH_DIR (parent of the temporary directory; needs ~4 x 2.5 GB per
6 h piece at 200 nodes while loading, then ~0.5 GB), PROMQL_BENCH_DEADLINE
(5400 s: the whole run). At the defaults (68M samples) loading takes ~5
minutes on 2 idle cores (promtool is the slowest: ~45 s a 6 h piece) and
measuring 10-15 (Prometheus needs 10-40 s a run for the CPU rates and
predict_linear); on a shared machine at load average ~6 it took 16 + 23
minutes. The load average is printed: other work on the machine skews the
latencies. Loops are bounded in count and time; only 127.0.0.1 is
used; every process started is stopped on the way out, failure included.
Exit status: 0 when every server asked for loaded and answered every query
and kelvin's answers equal Prometheus's (goals are reported, not enforced),
1 otherwise.
"""
import array
import json
import math
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "lib"))
import promql_data as pd  # noqa: E402
from benchlib import (BenchError, cleanup, cpu_seconds, free_port, http_get, log, metric_values, start,  # noqa: E402
                      status_kib, stop, wait_up)

KELVIN = os.path.abspath(os.environ.get("KELVIN_BIN", "build/kelvin"))
PEERS = os.path.abspath(os.environ.get("KELVIN_PEERS", "build/peers"))
PROMETHEUS = os.path.join(PEERS, "bin", "prometheus")
PROMTOOL = os.path.join(PEERS, "bin", "promtool")
VM = os.path.join(PEERS, "bin", "victoria-metrics")

NODES = int(os.environ.get("PROMQL_BENCH_NODES", "200"))
INTERVAL = int(os.environ.get("PROMQL_BENCH_INTERVAL", "30"))
HOURS = int(os.environ.get("PROMQL_BENCH_HOURS", "24"))
PIECE_H = int(os.environ.get("PROMQL_BENCH_PIECE_HOURS", "6"))
RUNS = int(os.environ.get("PROMQL_BENCH_RUNS", "5"))
STEP = int(os.environ.get("PROMQL_BENCH_STEP", "15"))
SERVERS = [s.strip() for s in os.environ.get("PROMQL_BENCH_SERVERS", "prometheus,vm,kelvin").split(",") if s.strip()]
ONLY_QUERIES = os.environ.get("PROMQL_BENCH_QUERIES", "")
DEADLINE = float(os.environ.get("PROMQL_BENCH_DEADLINE", "5400"))
MAX_SAMPLES = "500000000"
REQ_TIMEOUT = 600

QUERIES = [
    ("avg temp by host", "avg by (Hostname) (DCGM_FI_DEV_GPU_TEMP)"),
    ("max mem temp by host", "max by (Hostname) (DCGM_FI_DEV_MEMORY_TEMP)"),
    ("energy rate by host", "sum by (Hostname) (rate(DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION[5m]))"),
    ("busy CPU by instance", 'sum by (instance) (rate(node_cpu_seconds_total{mode!="idle"}[5m]))'),
    ("rate of all CPU series", "sum(rate(node_cpu_seconds_total[5m]))"),
    ("topk mem temp", "topk(5, DCGM_FI_DEV_MEMORY_TEMP)"),
    ("p99 latency", "histogram_quantile(0.99, sum by (le) (rate(app_request_duration_seconds_bucket[5m])))"),
    ("predict FB used", "predict_linear(DCGM_FI_DEV_FB_USED[1h], 4*3600)"),
    ("avg GPU util", "avg(DCGM_FI_DEV_GPU_UTIL)"),
]

NAMES = {"prometheus": "Prometheus 2.42", "vm": "VictoriaMetrics 1.79", "kelvin": "kelvin"}


def deadline_left(t_end, what):
    if time.time() > t_end:
        raise BenchError(f"PROMQL_BENCH_DEADLINE ({DEADLINE:.0f} s) passed during {what}")


# ---- loading ------------------------------------------------------------------------------------

def kelvin_has(cmd_args, needle):
    try:
        p = subprocess.run([KELVIN, *cmd_args], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return needle in (p.stdout + p.stderr)


def vm_flags():
    return ["-search.disableCache", "-search.maxStalenessInterval=5m", "-search.latencyOffset=0s",
            "-search.maxQueryDuration=10m", "-search.maxSamplesPerQuery=100000000000",
            "-search.maxUniqueTimeseries=10000000", "-search.maxPointsPerTimeseries=30000"]


def load(tmp, fleet, stores, t_end):
    """Generates the fleet piece by piece and loads every piece into the
    stores asked for; returns (samples, {store: seconds spent}, {store: error})."""
    dirs = {"prometheus": os.path.join(tmp, "prom"), "kelvin": os.path.join(tmp, "kelvin"),
            "vm": os.path.join(tmp, "vm")}
    errors, spent = {}, {s: 0.0 for s in stores + ["generate"]}
    vm = None
    if "vm" in stores:
        port = free_port()
        vlog = os.path.join(tmp, "vm-load.log")
        with open(vlog, "w") as lf:
            vm = start(pd.vm_cmd(VM, dirs["vm"], port, vm_flags()), stdout=lf, stderr=lf)
        wait_up(f"http://127.0.0.1:{port}/health", vm, vlog, deadline=60)
        vm.port = port
    block = [f"--max-block-duration={PIECE_H}h"]
    lock = threading.Lock()

    def ingest_one(store, om, txt):
        if store in errors:
            return
        t0 = time.time()
        try:
            if store == "prometheus":
                pd.backfill(PROMTOOL, om, dirs[store], block, timeout=1800)
            elif store == "kelvin":
                pd.backfill(KELVIN, om, dirs[store], block, timeout=1800)
            else:
                pd.vm_import(vm.port, txt, timeout=1800)
        except Exception as e:  # noqa: BLE001 - reported, the store is left out
            with lock:
                errors[store] = str(e)[-600:]
        with lock:
            spent[store] += time.time() - t0

    def ingest(om, txt):
        ts = [threading.Thread(target=ingest_one, args=(s, om, txt)) for s in stores]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        for f in (om, txt):
            os.remove(f)

    total, prev = 0, None
    pieces = [(a, min(a + PIECE_H * 3600, fleet.end)) for a in range(fleet.start, fleet.end, PIECE_H * 3600)]
    try:
        for i, (a, b) in enumerate(pieces):
            deadline_left(t_end, "loading")
            om, txt = os.path.join(tmp, f"piece{i}.om"), os.path.join(tmp, f"piece{i}.txt")
            t0 = time.time()
            total += fleet.write_piece(a, b, om, txt)
            spent["generate"] += time.time() - t0
            if prev is not None:
                prev.join()
            prev = threading.Thread(target=ingest, args=(om, txt))
            prev.start()
            log(f"  piece {i + 1}/{len(pieces)} generated ({total:,} samples so far, {time.time() - T_START:.0f} s)")
    finally:
        if prev is not None:
            prev.join()
    if vm is not None and "vm" not in errors:
        try:
            vm_settle(vm, total, dirs["vm"], t_end)
        except BenchError as e:
            errors["vm"] = str(e)
    if vm is not None:
        stop(vm, timeout=60)
    return total, spent, errors, dirs


def vm_settle(vm, total, data_dir, t_end):
    base = f"http://127.0.0.1:{vm.port}"
    end = min(t_end, time.time() + 300)
    ins = 0
    while time.time() < end:
        ins = sum(metric_values(http_get(base + "/metrics"), "vm_rows_inserted_total").values())
        if ins >= total:
            break
        time.sleep(0.5)
    if ins != total:
        raise BenchError(f"VictoriaMetrics took {ins:.0f} rows of {total}")
    http_get(base + "/internal/force_flush", 600)
    last, stable = -1, 0
    while time.time() < end and stable < 3:
        m = http_get(base + "/metrics")
        busy = sum(metric_values(m, "vm_active_merges").values()) + sum(metric_values(m, "vm_pending_rows").values())
        size = dir_bytes(data_dir)
        stable = stable + 1 if (busy == 0 and size == last) else 0
        last = size
        time.sleep(1)


def dir_bytes(path):
    n = 0
    for root, _, files in os.walk(path):
        for f in files:
            try:
                n += os.path.getsize(os.path.join(root, f))
            except OSError:
                pass
    return n


# ---- measuring ----------------------------------------------------------------------------------

def server_cmd(key, dirs, cfg, port, kelvin_extra):
    block = [f"--storage.tsdb.min-block-duration=2h", f"--storage.tsdb.max-block-duration={PIECE_H}h"]
    if key == "prometheus":
        return pd.prometheus_cmd(PROMETHEUS, dirs[key], cfg, port,
                                 block + [f"--query.max-samples={MAX_SAMPLES}", "--query.timeout=10m"])
    if key == "kelvin":
        return pd.kelvin_server_cmd(KELVIN, dirs[key], cfg, port, block + kelvin_extra)
    return pd.vm_cmd(VM, dirs[key], port, vm_flags())


def loadavg():
    """The machine's 1-minute load average: other work skews the latencies."""
    try:
        with open("/proc/loadavg") as f:
            return f.read().split()[0]
    except OSError:
        return "?"


def reset_hwm(pid):
    """Resets VmHWM to the current RSS (Linux clear_refs 5); False if refused."""
    try:
        with open(f"/proc/{pid}/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def summarize(body):
    """{label key: (array of ms timestamps, array of values)} of a matrix answer."""
    j = json.loads(body)
    if j.get("status") != "success" or j["data"]["resultType"] != "matrix":
        raise BenchError(f"not a matrix answer: {body[:300]!r}")
    out = {}
    for s in j["data"]["result"]:
        ts = array.array("q", (int(round(p[0] * 1000)) for p in s["values"]))
        vs = array.array("d", (float(p[1]) for p in s["values"]))
        out[tuple(sorted(s["metric"].items()))] = (ts, vs)
    stats = (j["data"].get("stats") or {}).get("samples") or {}
    return out, stats.get("peakSamples")


def agreement(ref, got, ignore_name=False):
    """(series in ref, series in got, common series, common points, share
    within 1e-9, share within 1 %, points only on one side). ignore_name:
    match series without __name__ (MetricsQL keeps it where PromQL drops
    it, e.g. after predict_linear)."""
    if ignore_name:
        def strip(d):
            out = {}
            for k, v in d.items():
                out.setdefault(tuple(x for x in k if x[0] != "__name__"), v)
            return out
        ref, got = strip(ref), strip(got)
    common = ref.keys() & got.keys()
    pts = exact = close = lonely = 0
    for k in common:
        (ta, va), (tb, vb) = ref[k], got[k]
        ib = {t: i for i, t in enumerate(tb)}
        lonely += len(set(ta) ^ set(tb))
        for i, t in enumerate(ta):
            j = ib.get(t)
            if j is None:
                continue
            a, b = va[i], vb[j]
            pts += 1
            if a == b or (math.isnan(a) and math.isnan(b)):
                exact += 1
                close += 1
                continue
            d = abs(a - b) / max(abs(a), abs(b)) if not (math.isinf(a) or math.isinf(b)) else math.inf
            exact += d <= 1e-9
            close += d <= 0.01
    return (len(ref), len(got), len(common), pts, exact / pts if pts else 1.0, close / pts if pts else 1.0, lonely)


def measure(key, dirs, cfg, queries, ref, t_end, kelvin_extra):
    """Runs every query on one server; returns {query name: result dict}."""
    port = free_port()
    slog = os.path.join(os.path.dirname(cfg), f"{key}.log")
    with open(slog, "w") as lf:
        p = start(server_cmd(key, dirs, cfg, port, kelvin_extra), stdout=lf, stderr=lf)
    out = {}
    try:
        wait_up(f"http://127.0.0.1:{port}" + ("/health" if key == "vm" else "/-/ready"), p, slog, deadline=300)
        api = pd.Api(port, timeout=REQ_TIMEOUT)
        st, body, _ = api.query_range("1", pd.fmt_time(pd.T0), pd.fmt_time(pd.T0 + 60), "15")
        if st != 200:
            raise BenchError(f"{NAMES[key]} does not answer /api/v1/query_range: HTTP {st} {body[:200]!r}")
        t_from, t_to = pd.T0, pd.T0 + HOURS * 3600
        for name, expr in queries:
            deadline_left(t_end, f"{NAMES[key]}: {name}")
            extra = {"nocache": "1"} if key == "vm" else {}
            warm_extra = dict(extra, **({"stats": "all"} if key != "vm" else {}))
            st, body, dt_warm = api.query_range(expr, str(t_from), str(t_to), str(STEP), method="POST",
                                                extra=warm_extra)
            r = {"warm": dt_warm, "status": st}
            if st != 200:
                r["error"] = body[:300].decode("utf-8", "replace")
                out[name] = r
                log(f"    {name}: HTTP {st}: {r['error']}")
                continue
            summ, peak = summarize(body)
            del body
            r["series"] = len(summ)
            r["points"] = sum(len(v[0]) for v in summ.values())
            r["peak_samples"] = peak
            if ref is not None and name in ref:
                r["agree"] = agreement(ref[name], summ, ignore_name=key == "vm")
            if key == "prometheus":
                r["answer"] = summ
            else:
                del summ
            reset_ok = reset_hwm(p.pid)
            rss0, hwm0 = status_kib(p.pid, "VmRSS"), status_kib(p.pid, "VmHWM")
            c0 = cpu_seconds(p.pid)
            lat, size = [], 0
            for _ in range(RUNS):
                deadline_left(t_end, f"{NAMES[key]}: {name}")
                st, size, dt = api.query_range(expr, str(t_from), str(t_to), str(STEP), method="POST", extra=extra,
                                               discard=True)
                if st != 200:
                    raise BenchError(f"{NAMES[key]}: {name}: HTTP {st} in a timed run")
                lat.append(dt)
            hwm = status_kib(p.pid, "VmHWM")
            r.update(lat=lat, median=statistics.median(lat), bytes=size, cpu=(cpu_seconds(p.pid) - c0) / RUNS,
                     rss0=rss0, hwm=hwm, grow=hwm - (rss0 if reset_ok else hwm0), hwm_reset=reset_ok)
            out[name] = r
            ag = r.get("agree")
            agtxt = (f"; vs Prometheus: series {ag[2]}/{ag[0]}, {ag[4] * 100:.2f}% exact, {ag[5] * 100:.2f}% within 1%"
                     if ag else "")
            log(f"    {name}: median {r['median'] * 1000:.0f} ms (runs {', '.join(f'{x * 1000:.0f}' for x in lat)}), "
                f"{r['series']} series, {size / 1e6:.1f} MB, peak RSS +{r['grow'] / 1024:.0f} MiB{agtxt}")
        api.close()
    finally:
        stop(p, timeout=60)
    return out


# ---- report -----------------------------------------------------------------------------------------

def fmt_ms(r):
    if not r or "median" not in r:
        return "-"
    return f"{r['median'] * 1000:.0f}"


def report(res, queries, problems):
    P, V, K = (res.get(k, {}) for k in ("prometheus", "vm", "kelvin"))
    log("")
    log(f"PromQL range queries, {HOURS} h at step {STEP} s ({HOURS * 3600 // STEP + 1} points), median of {RUNS} "
        f"runs (ms); data: {NODES} nodes x {pd.Fleet(1, INTERVAL, 1).series_per_node()} series every {INTERVAL} s")
    hdr = f"  {'query':<24}{'Prom':>8}{'VM':>8}{'kelvin':>8}{'k/VM':>7}{'k/Prom':>8}{'VM/Prom':>8}" \
          f"{'series P/VM/k':>16}{'peak MiB P/VM/k':>20}{'peakSamples P/k':>22}"
    log(hdr)
    met, measured, missed = 0, 0, []
    for name, _ in queries:
        p, v, k = P.get(name), V.get(name), K.get(name)

        def ratio(a, b):
            if a and b and "median" in a and "median" in b and b["median"] > 0:
                return f"{a['median'] / b['median']:.2f}"
            return "-"

        def ser(r):
            return str(r["series"]) if r and "series" in r else "-"

        def mem(r):
            return f"{max(0, r['grow']) / 1024:.0f}" if r and "grow" in r else "-"

        def peak(r):
            return f"{r['peak_samples']:,}" if r and r.get("peak_samples") is not None else "-"

        if k and v and "median" in k and "median" in v:
            measured += 1
            if k["median"] <= 0.5 * v["median"]:
                met += 1
            else:
                missed.append(f"{name} {k['median'] / v['median']:.2f}")
        log(f"  {name:<24}{fmt_ms(p):>8}{fmt_ms(v):>8}{fmt_ms(k):>8}{ratio(k, v):>7}{ratio(k, p):>8}{ratio(v, p):>8}"
            f"{ser(p) + '/' + ser(v) + '/' + ser(k):>16}{mem(p) + '/' + mem(v) + '/' + mem(k):>20}"
            f"{peak(p) + '/' + peak(k):>22}")
    log("  queries:")
    for name, expr in queries:
        log(f"    {name:<24}{expr}")
    for key in ("vm", "kelvin"):
        rows = [(n, r["agree"]) for n, r in res.get(key, {}).items() if r.get("agree")]
        if rows:
            log(f"  {NAMES[key]} vs Prometheus (series common/Prometheus's, points exact within 1e-9, within 1%"
                + ("; labels without __name__" if key == "vm" else "") + "): "
                + "; ".join(f"{n}: {a[2]}/{a[0]}, {a[4] * 100:.1f}%, {a[5] * 100:.1f}%" for n, a in rows))
    if measured:
        log(f"  goal: kelvin <= 0.5 x VictoriaMetrics on every query: met on {met} of {measured}"
            + ("" if measured == len(queries) else f" measured (of {len(queries)})")
            + (f"; not met: {', '.join(missed)}" if missed else ""))
    else:
        log("  goal: kelvin <= 0.5 x VictoriaMetrics on every query: kelvin not measured")
    for pr in problems:
        log(f"  problem: {pr}")


T_START = time.time()


def main():
    if os.environ.get("BENCH_ONLY", "") not in ("", "promql"):
        return 0
    unknown = [s for s in SERVERS if s not in NAMES]
    if unknown:
        raise SystemExit(f"promql bench: unknown PROMQL_BENCH_SERVERS entries {unknown} (prometheus, vm, kelvin)")
    if PIECE_H not in (2, 6) or (HOURS * 3600) % (PIECE_H * 3600):
        raise SystemExit("promql bench: PROMQL_BENCH_PIECE_HOURS must be 2 or 6 and divide PROMQL_BENCH_HOURS")
    need = {"prometheus": [PROMETHEUS, PROMTOOL], "vm": [VM], "kelvin": [KELVIN]}
    for s in SERVERS:
        for b in need[s]:
            if not os.access(b, os.X_OK):
                raise SystemExit(f"promql bench: {b} missing ({'set KELVIN_BIN' if s == 'kelvin' else 'run scripts/peers'})")
    queries = [(n, q) for n, q in QUERIES if not ONLY_QUERIES or re.search(ONLY_QUERIES, n)]
    fleet = pd.Fleet(NODES, INTERVAL, HOURS)
    log(f"kelvin PromQL benchmark ({time.strftime('%Y-%m-%d %H:%M:%S')}, {os.cpu_count()} CPUs): {NODES} nodes x "
        f"{fleet.series_per_node()} series = {NODES * fleet.series_per_node():,} series, {HOURS} h every "
        f"{INTERVAL} s = {fleet.samples_between(fleet.start, fleet.end):,} samples; servers: {', '.join(SERVERS)}")
    tmp = tempfile.mkdtemp(prefix="kelvin-promql-bench-", dir=os.environ.get("PROMQL_BENCH_DIR") or None)
    old = signal.signal(signal.SIGTERM, lambda *a: sys.exit(143))
    t_end = T_START + DEADLINE
    res, problems, rc = {}, [], 0
    try:
        stores = list(SERVERS)
        if "kelvin" in stores and not kelvin_has(["tsdb", "--help"], "create-blocks-from"):
            problems.append(f"kelvin: {KELVIN} has no `tsdb create-blocks-from`: left out")
            stores.remove("kelvin")
        kelvin_extra = []
        if "kelvin" in stores and kelvin_has(["server", "--help"], "query.max-samples"):
            kelvin_extra = [f"--query.max-samples={MAX_SAMPLES}"]
        if "kelvin" in stores and kelvin_has(["server", "--help"], "query.timeout"):
            kelvin_extra.append("--query.timeout=10m")
        log(f"loading (pieces of {PIECE_H} h, generated while the previous one loads) ...")
        t0 = time.time()
        total, spent, errors, dirs = load(tmp, fleet, stores, t_end)
        log(f"  loaded {total:,} samples in {time.time() - t0:.0f} s (busy: "
            + ", ".join(f"{k} {v:.0f} s" for k, v in spent.items()) + "; the stores load side by side)")
        for s, e in errors.items():
            problems.append(f"{NAMES[s]}: loading failed: {e}")
            stores.remove(s)
            rc = 1
        for s in ("prometheus", "kelvin"):
            if s in stores:
                log(f"  {NAMES[s]} blocks: {dir_bytes(dirs[s]) / 1e6:.0f} MB")
        if "vm" in stores:
            log(f"  {NAMES['vm']} data: {dir_bytes(dirs['vm']) / 1e6:.0f} MB")
        cfg = os.path.join(tmp, "prometheus.yml")
        pd.write_empty_config(cfg)
        ref = None
        order = [s for s in ("prometheus", "vm", "kelvin") if s in stores]
        for key in order:
            log(f"measuring {NAMES[key]} (load average {loadavg()}) ...")
            try:
                res[key] = measure(key, dirs, cfg, queries, ref, t_end, kelvin_extra)
            except BenchError as e:
                problems.append(f"{NAMES[key]}: {e}")
                rc = 1
                continue
            if key == "prometheus":
                ref = {n: r.pop("answer") for n, r in res[key].items() if "answer" in r}
            for n, r in res[key].items():
                if "median" not in r:
                    problems.append(f"{NAMES[key]}: {n}: {r.get('error', 'no answer')}")
                    rc = 1
                ag = r.get("agree")
                if key == "kelvin" and ag and (ag[0] != ag[1] or ag[2] != ag[0] or ag[4] < 1.0 or ag[6]):
                    problems.append(f"kelvin: {n}: answer differs from Prometheus's (series {ag[1]} vs {ag[0]}, "
                                    f"{ag[4] * 100:.3f}% of common points exact, {ag[6]} points on one side only)")
                    rc = 1
        for s in SERVERS:
            if s not in res and not any(pr.startswith(NAMES[s]) or pr.startswith(s) for pr in problems):
                problems.append(f"{NAMES[s]}: not measured")
                rc = 1
    except BenchError as e:
        problems.append(str(e))
        rc = 1
    finally:
        cleanup()
        signal.signal(signal.SIGTERM, old)
        if os.environ.get("PROMQL_BENCH_KEEP"):
            log(f"  the data is kept in {tmp} (PROMQL_BENCH_KEEP)")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    report(res, queries, problems)
    log(f"promql bench: {time.time() - T_START:.0f} s in all (load average now {loadavg()}; "
        f"{os.cpu_count()} CPUs)")
    return rc


if __name__ == "__main__":
    sys.exit(main())
