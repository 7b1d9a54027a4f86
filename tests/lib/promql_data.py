"""tests/lib/promql_data.py -- the PromQL data sets and how they get into
Prometheus 2.42, kelvin and VictoriaMetrics 1.79; shared by the differential
suite (tests/compat/promql_diff.py) and the benchmark (bench/promql_bench.py).

Two data sets, both deterministic (seeded generators, never the clock):

- the DIFF set (write_diff_dataset): a few hosts, 2 h at 15 s from
  2024-01-01T00:00Z, one OpenMetrics file (every sample timestamped,
  `# EOF`) full of what makes PromQL hard: dcgm-exporter gauges (integer
  temperatures with many ties, full-precision floats), energy and CPU
  counters with resets, a classic histogram (and a broken one: no +Inf
  bucket, non-monotonic buckets), NaN/+Inf/-Inf samples, a series with a
  gap longer than the 5 m lookback, series that start late and stop early,
  missing scrapes, hosts scraped at unaligned millisecond offsets, label
  values that need escaping. Stale markers cannot be written in text (the
  parsers turn "NaN" into the ordinary NaN), so staleness is covered by the
  gaps and ends.

- the FLEET set (Fleet): N nodes x 8 GPUs of dcgm-exporter series, 16 CPUs
  x 4 modes of node_cpu_seconds_total, MemAvailable and an app latency
  histogram, at a chosen interval, written piece by piece (write_piece) both
  as OpenMetrics (float-second timestamps: promtool / kelvin backfill) and
  as Prometheus text with millisecond timestamps (VictoriaMetrics
  /api/v1/import/prometheus). Pieces are series-major (each series' samples
  in time order, metric families contiguous), so a piece's file streams out
  without holding the piece in memory; per-series state (random walks,
  counters) carries over from piece to piece.

Loading: backfill() runs `promtool tsdb create-blocks-from openmetrics` or
`kelvin tsdb create-blocks-from openmetrics`; prometheus_cmd /
kelvin_server_cmd / vm_cmd build the server command lines (loopback only);
vm_import streams a file into VictoriaMetrics; Api is a keep-alive client
for /api/v1/query and /api/v1/query_range.

Standard library only. Nothing here starts a process on its own except
backfill (which waits for it, with a timeout); callers own the servers.
"""
import http.client
import json
import math
import os
import random
import subprocess
import time
import urllib.parse

T0 = 1704067200  # 2024-01-01T00:00:00Z, a multiple of 6 h (and of 2 h) since the epoch

# ---------------------------------------------------------------------------
# the DIFF data set
# ---------------------------------------------------------------------------

DIFF_STEP = 15  # seconds between scrapes
DIFF_SCRAPES = 481  # 0 .. 2 h inclusive
DIFF_HOSTS = [("node-a", 0), ("node-b", 3217), ("node-c", 7500)]  # name, scrape offset (ms)
MODEL = "NVIDIA H100 80GB HBM3"
BUCKETS = ["0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1", "2.5", "5", "+Inf"]
BUCKET_BOUNDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, math.inf]


def _fmt(v):
    """A float as the exposition writes it: shortest round-trip digits."""
    if isinstance(v, int):
        return str(v)
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    r = repr(v)
    return r[:-2] if r.endswith(".0") else r


def _om_ts(ms):
    """Milliseconds as OpenMetrics float seconds (exact: three decimals)."""
    if ms % 1000 == 0:
        return str(ms // 1000)
    return f"{ms // 1000}.{ms % 1000:03d}"


def _labels(d):
    def esc(v):
        return v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return "{" + ",".join(f'{k}="{esc(v)}"' for k, v in d.items()) + "}"


class _Family:
    """One metric family: its series, each a list of (ms, value) in time order."""

    def __init__(self, name, typ):
        self.name, self.typ, self.series = name, typ, []

    def add(self, metric, labels, points):
        self.series.append((metric, labels, points))


def _diff_families():
    rnd = random.Random(20240101)
    fams = []

    def times(off_ms, skip=None):
        out = []
        for i in range(DIFF_SCRAPES):
            ms = (T0 + i * DIFF_STEP) * 1000 + off_ms
            if skip and skip(i, ms):
                continue
            out.append(ms)
        return out

    uuid_tag = {"node-a": "7a1c", "node-b": "03be", "node-c": "f90d"}

    def gl(host, g):
        return {"Hostname": host, "UUID": f"GPU-{uuid_tag[host]}{g:04x}-5d1e-4b2a-9c3f-00{g}e{uuid_tag[host]}",
                "device": f"nvidia{g}", "gpu": str(g), "instance": f"{host}:9400", "job": "dcgm",
                "modelName": MODEL}

    # --- dcgm-exporter gauges and counters ---------------------------------
    temp = _Family("DCGM_FI_DEV_GPU_TEMP", "gauge")
    mtemp = _Family("DCGM_FI_DEV_MEMORY_TEMP", "gauge")
    power = _Family("DCGM_FI_DEV_POWER_USAGE", "gauge")
    energy = _Family("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter")
    fb = _Family("DCGM_FI_DEV_FB_USED", "gauge")
    util = _Family("DCGM_FI_DEV_GPU_UTIL", "gauge")
    for host, off in DIFF_HOSTS:
        for g in range(2):
            lab = gl(host, g)
            ts = times(off)
            t, mt, p, e, f, u = 40 + rnd.randint(0, 20), 50 + rnd.randint(0, 20), 150.0, 10 ** 9 + rnd.randint(0, 10 ** 6), \
                30000 + rnd.randint(0, 5000), 50
            tp, mp, pp, ep, fp, up = [], [], [], [], [], []
            for i, ms in enumerate(ts):
                t = max(30, min(90, t + rnd.choice((-1, 0, 0, 1))))
                mt = max(35, min(95, mt + rnd.choice((-1, 0, 1))))
                p = max(60.0, min(700.0, p + rnd.uniform(-25, 25)))
                pr = round(p, 3)
                u = max(0, min(100, u + rnd.randint(-10, 10)))
                e += int(pr * DIFF_STEP * 1000)
                if host == "node-b" and g == 1 and i == 200:  # a GPU reset: the counter starts over
                    e = rnd.randint(0, 5000)
                f = max(0, min(81559, f + rnd.randint(-300, 340)))
                tp.append((ms, t))
                mp.append((ms, mt))
                pp.append((ms, pr))
                ep.append((ms, e))
                up.append((ms, u))
                fp.append((ms, f))
            if host == "node-c" and g == 0:  # a 12-minute hole: longer than the lookback
                fp = [(ms, v) for (ms, v) in fp if not (T0 + 2400) * 1000 <= ms < (T0 + 3120) * 1000]
            if host == "node-c" and g == 1:  # stops for good at 100 m
                fp = [(ms, v) for (ms, v) in fp if ms < (T0 + 6000) * 1000]
            if host == "node-a" and g == 1:  # appears at 20 m
                fp = [(ms, v) for (ms, v) in fp if ms >= (T0 + 1200) * 1000]
            temp.add(temp.name, lab, tp)
            mtemp.add(mtemp.name, lab, mp)
            power.add(power.name, lab, pp)
            energy.add(energy.name, lab, ep)
            fb.add(fb.name, lab, fp)
            util.add(util.name, lab, up)
    fams += [temp, mtemp, power, energy, fb, util]

    # --- node_exporter ----------------------------------------------------
    cpu = _Family("node_cpu_seconds_total", "counter")
    mem = _Family("node_memory_MemAvailable_bytes", "gauge")
    for host, off in DIFF_HOSTS:
        inst = {"instance": f"{host}:9100", "job": "node"}
        ts = times(off)
        for c in range(2):
            acc = {m: rnd.uniform(1000, 5000) for m in ("idle", "iowait", "system", "user")}
            pts = {m: [] for m in acc}
            for i, ms in enumerate(ts):
                busy = rnd.uniform(0, 1)
                inc = {"user": busy * 0.7 * DIFF_STEP, "system": busy * 0.2 * DIFF_STEP,
                       "iowait": rnd.uniform(0, 0.05) * DIFF_STEP}
                inc["idle"] = DIFF_STEP - sum(inc.values())
                for m in acc:
                    acc[m] += inc[m]
                    if host == "node-a" and i == 280:  # a reboot: every CPU counter starts over
                        acc[m] = inc[m]
                    pts[m].append((ms, round(acc[m], 2)))
            for m in sorted(pts):
                cpu.add(cpu.name, {"cpu": str(c), "instance": inst["instance"], "job": "node", "mode": m}, pts[m])
        mv, mp = 6.0e11, []
        for ms in ts:
            mv = max(1e10, mv + rnd.randint(-100000, 100000) * 4096)
            mp.append((ms, int(mv)))
        mem.add(mem.name, dict(inst), mp)
    fams += [cpu, mem]

    # --- classic histograms -------------------------------------------------
    hist = _Family("app_request_duration_seconds", "histogram")
    for host, off in DIFF_HOSTS:
        ts = times(off)
        for handler in ("/api/infer", "/metrics"):
            base = {"handler": handler, "instance": f"{host}:8080", "job": "app"}
            counts = [0] * len(BUCKETS)
            total_sum, pts_b, pts_s, pts_c = 0.0, [[] for _ in BUCKETS], [], []
            for ms in ts:
                n = rnd.randint(0, 40 if handler == "/metrics" else 200)
                for _ in range(min(n, 30)):  # a few observations drawn, the rest as the mix
                    x = rnd.expovariate(8.0 if handler == "/api/infer" else 40.0)
                    total_sum += x
                    for k, b in enumerate(BUCKET_BOUNDS):
                        if x <= b:
                            counts[k] += 1
                for k in range(len(BUCKETS)):
                    pts_b[k].append((ms, counts[k]))
                pts_s.append((ms, round(total_sum, 6)))
                pts_c.append((ms, counts[-1]))
            for k, le in enumerate(BUCKETS):
                hist.add("app_request_duration_seconds_bucket", dict(base, le=le), pts_b[k])
            hist.add("app_request_duration_seconds_sum", base, pts_s)
            hist.add("app_request_duration_seconds_count", base, pts_c)
    fams.append(hist)
    # a histogram that breaks the rules: no +Inf bucket on one instance, a
    # bucket lower than the one before it on the other
    broken = _Family("app_broken_seconds", "unknown")
    for host, off in DIFF_HOSTS[:2]:
        ts = times(off)
        les = ["0.1", "1", "10"] + (["+Inf"] if host != "node-a" else [])
        acc = [0] * len(les)
        pts = [[] for _ in les]
        for ms in ts:
            a = rnd.randint(0, 5)
            for k in range(len(les)):
                acc[k] += a + k * rnd.randint(0, 3)
                v = acc[k] - (7 if host == "node-b" and k == 1 else 0)
                pts[k].append((ms, v))
        for k, le in enumerate(les):
            broken.add("app_broken_seconds_bucket", {"instance": f"{host}:8080", "job": "app", "le": le}, pts[k])
    fams.append(broken)

    # --- special values, gaps, odd labels ------------------------------------
    special = _Family("test_special_values", "gauge")
    for kind in ("nan", "inf", "mixed"):
        ts = times(0)
        pts = []
        for i, ms in enumerate(ts):
            v = rnd.uniform(-10, 10)
            if kind == "nan" and i % 7 == 3:
                v = math.nan
            elif kind == "inf" and i % 11 == 5:
                v = math.inf if i % 2 else -math.inf
            elif kind == "mixed":
                v = (math.nan, math.inf, -math.inf, 0.0, -0.0, 1e308, -1e-308, 5e-324)[i % 8] if i % 3 == 0 else v
            pts.append((ms, v))
        special.add(special.name, {"job": "special", "kind": kind}, pts)
    fams.append(special)

    flaky = _Family("probe_success", "gauge")
    for host, off in DIFF_HOSTS:
        ts = times(off, skip=lambda i, ms: rnd.random() < 0.2)  # missing scrapes
        flaky.add(flaky.name, {"instance": f"{host}:9115", "job": "blackbox"},
                  [(ms, 1 if rnd.random() < 0.9 else 0) for ms in ts])
    fams.append(flaky)

    wave = _Family("signal_ratio", "gauge")
    for shape in ("sin", "saw", "tiny"):
        ts = times(1250)
        pts = []
        for i, ms in enumerate(ts):
            if shape == "sin":
                v = math.sin(i / 17.0)
            elif shape == "saw":
                v = ((i % 40) - 20) / 20.0
            else:
                v = (i % 5 - 2) * 1e-12 + 1e15 * (i % 2)
            pts.append((ms, v))
        wave.add(wave.name, {"job": "synthetic", "shape": shape}, pts)
    fams.append(wave)

    up = _Family("up", "gauge")
    for job, port in (("dcgm", 9400), ("node", 9100), ("app", 8080)):
        for host, off in DIFF_HOSTS:
            ts = times(off)
            down = job == "app" and host == "node-c"
            up.add("up", {"instance": f"{host}:{port}", "job": job},
                   [(ms, 0 if down and 1000 <= (ms // 1000 - T0) < 2000 else 1) for ms in ts])
    fams.append(up)

    info = _Family("gpu_node_info", "gauge")
    for (host, off), rack in zip(DIFF_HOSTS, ("r1", "r1", "r2")):
        info.add(info.name, {"Hostname": host, "kernel": "5.15.0-91", "rack": rack}, [(ms, 1) for ms in times(off)])
    fams.append(info)

    odd = _Family("label_escapes", "gauge")
    odd.add(odd.name, {"path": "/a/b c", "quote": 'say "hi"', "slash": "C:\\temp\\", "utf8": "température °C",
                       "nl": "line1\nline2"}, [(ms, 42) for ms in times(0)])
    odd.add(odd.name, {"path": "/x", "quote": "", "slash": "/", "utf8": "日本"}, [(ms, -1.5) for ms in times(0)])
    fams.append(odd)

    # a short-lived burst in the middle (starts at 30 m, ends at 35 m)
    burst = _Family("batch_job_progress", "gauge")
    for j in range(3):
        ts = [ms for ms in times(0) if (T0 + 1800) * 1000 <= ms < (T0 + 2100) * 1000]
        burst.add(burst.name, {"job": "batch", "run": str(j)}, [(ms, k * (j + 1)) for k, ms in enumerate(ts)])
    fams.append(burst)
    return fams


def write_diff_dataset(path):
    """Writes the DIFF set as OpenMetrics to path; returns a dict with t0/t1
    (seconds, first and last scrape), series and samples."""
    fams = _diff_families()
    n_series = n_samples = 0
    with open(path, "w", encoding="utf-8") as fh:
        for fam in fams:
            fh.write(f"# TYPE {fam.name} {fam.typ}\n")
            for metric, labels, points in fam.series:
                head = metric + _labels(labels) + " "
                fh.write("".join(f"{head}{_fmt(v)} {_om_ts(ms)}\n" for ms, v in points))
                n_series += 1
                n_samples += len(points)
        fh.write("# EOF\n")
    return {"t0": T0, "t1": T0 + (DIFF_SCRAPES - 1) * DIFF_STEP, "series": n_series, "samples": n_samples}


# ---------------------------------------------------------------------------
# the FLEET data set (benchmark)
# ---------------------------------------------------------------------------

CPU_MODES = ("idle", "iowait", "system", "user")


class Fleet:
    """nodes x (8 GPUs x 5 dcgm series, 16 CPUs x 4 modes, MemAvailable, a
    13-series latency histogram: 11 buckets, _sum, _count) = 118 series a node, every `interval`
    seconds from `start` for `hours`. Each node is scraped at its own
    millisecond offset inside the interval, as Prometheus spreads targets."""

    GPUS, CPUS = 8, 16

    def __init__(self, nodes, interval, hours, start=T0, seed=7):
        self.nodes, self.interval, self.hours, self.start = nodes, interval, hours, start
        self.end = start + hours * 3600  # exclusive
        self.seed = seed
        self.state = {}  # series key -> carried state

    def series_per_node(self):
        return self.GPUS * 5 + self.CPUS * len(CPU_MODES) + 1 + len(BUCKETS) + 2

    def samples_between(self, t_from, t_to):
        return self.nodes * self.series_per_node() * len(range(t_from, t_to, self.interval))

    def offset_ms(self, n):
        return (n * 7919 + 1234) % (self.interval * 1000)

    def _node(self, n):
        return f"node-{n:04d}"

    def write_piece(self, t_from, t_to, om_path, vm_path):
        """Writes the samples with t_from <= t < t_to (seconds, scrape times
        before the node's offset) to om_path (OpenMetrics, `# EOF`) and
        vm_path (text, ms timestamps). Returns the number of samples."""
        steps = list(range(t_from, t_to, self.interval))
        total = 0
        with open(om_path, "w", encoding="utf-8", buffering=1 << 20) as om, \
                open(vm_path, "w", encoding="utf-8", buffering=1 << 20) as vm:
            sufs = []
            for n in range(self.nodes):
                off = self.offset_ms(n)
                sufs.append(([f" {_om_ts(s * 1000 + off)}\n" for s in steps],
                             [f" {s * 1000 + off}\n" for s in steps]))

            def emit(head, vals, n):
                so, sv = sufs[n]
                om.write("".join([head + v + s for v, s in zip(vals, so)]))
                vm.write("".join([head + v + s for v, s in zip(vals, sv)]))

            loads = [self._load(n, len(steps)) for n in range(self.nodes)]
            for metric, typ, gen in self._metrics(loads):
                om.write(f"# TYPE {metric} {typ}\n")
                for n in range(self.nodes):
                    for head, vals in gen(n, len(steps)):
                        emit(head, vals, n)
                        total += len(vals)
            om.write("# EOF\n")
        return total

    # Each generator yields (series head "name{labels} ", [value strings]).
    def _rng(self, key):
        st = self.state.get(key)
        if st is None:
            st = self.state[key] = {"r": random.Random(f"{self.seed}/{key}")}
        return st

    def _gpu_labels(self, n, g):
        host = self._node(n)
        return (f'{{Hostname="{host}",UUID="GPU-{n:04x}{g:04x}-7d1e-4b2a-9c3f-{n:08x}",device="nvidia{g}",'
                f'gpu="{g}",instance="{host}:9400",job="dcgm-exporter",modelName="{MODEL}"}} ')

    def _load(self, n, k):
        """The node's load phase for step k (0..1), shared by its metrics."""
        st = self._rng(f"load/{n}")
        if "phase" not in st:
            st["phase"], st["left"] = 0.9, 0
        r = st["r"]
        out = []
        for _ in range(k):
            if st["left"] <= 0:
                st["phase"] = r.choice((0.02, 0.35, 0.9, 0.98))
                st["left"] = r.randint(20, 400)
            st["left"] -= 1
            out.append(st["phase"])
        return out

    def _metrics(self, loads):
        def load(n, k):
            return loads[n]

        def gauge_walk(name, lo, hi, start, step, follow):
            def gen(n, k):
                ld = load(n, k)
                for g in range(self.GPUS):
                    st = self._rng(f"{name}/{n}/{g}")
                    r = st["r"]
                    v = st.get("v", start + r.randint(0, 10))
                    vals = []
                    rr = r.random
                    for x in ld:
                        target = lo + (hi - lo) * x if follow else v
                        v += (1 if target > v else -1 if target < v else 0) if rr() < 0.3 else 0
                        v += (1 if rr() < 0.1 else -1 if rr() < 0.11 else 0)
                        v = lo if v < lo else hi if v > hi else v
                        vals.append(str(v))
                    st["v"] = v
                    yield name + self._gpu_labels(n, g), vals
            return gen

        def util(n, k):
            ld = load(n, k)
            for g in range(self.GPUS):
                r = self._rng(f"util/{n}/{g}")["r"]
                ri = r.randint
                yield ("DCGM_FI_DEV_GPU_UTIL" + self._gpu_labels(n, g),
                       [str(max(0, min(100, int(x * 100) + ri(-3, 3)))) for x in ld])

        def fb(n, k):
            ld = load(n, k)
            for g in range(self.GPUS):
                st = self._rng(f"fb/{n}/{g}")
                r = st["r"]
                v = st.get("v", 2000 + r.randint(0, 1000))
                vals = []
                ri = r.randint
                for x in ld:
                    v += ri(-64, 96) if x > 0.5 else ri(-120, 40)
                    v = 500 if v < 500 else 81000 if v > 81000 else v
                    vals.append(str(v))
                st["v"] = v
                yield "DCGM_FI_DEV_FB_USED" + self._gpu_labels(n, g), vals

        def energy(n, k):
            ld = load(n, k)
            for g in range(self.GPUS):
                st = self._rng(f"energy/{n}/{g}")
                r = st["r"]
                v = st.get("v", 10 ** 10 + r.randint(0, 10 ** 9))
                vals = []
                ri = r.randint
                iv = self.interval
                for x in ld:
                    v += (70 + int(620 * x) + ri(-5, 5)) * iv * 1000  # mJ
                    vals.append(str(v))
                st["v"] = v
                yield "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION" + self._gpu_labels(n, g), vals

        def cpu(n, k):
            ld = load(n, k)
            host = self._node(n)
            iv = self.interval * 100  # centiseconds per interval
            for c in range(self.CPUS):
                st = self._rng(f"cpu/{n}/{c}")
                r = st["r"]
                acc = st.get("acc") or [r.randint(10 ** 6, 10 ** 7) for _ in CPU_MODES]
                cols = [[] for _ in CPU_MODES]
                ri = r.randint
                for x in ld:
                    busy = int(iv * 0.3 * x) + ri(0, iv // 20)
                    sy = busy // 4
                    io = ri(0, iv // 100 + 1)
                    incs = (iv - busy - sy - io, io, sy, busy)  # idle, iowait, system, user
                    for m in range(4):
                        acc[m] += max(0, incs[m])
                        a = acc[m]
                        cols[m].append(f"{a // 100}.{a % 100:02d}")
                st["acc"] = acc
                for m, mode in enumerate(CPU_MODES):
                    yield (f'node_cpu_seconds_total{{cpu="{c}",instance="{host}:9100",job="node",mode="{mode}"}} ',
                           cols[m])

        def mem(n, k):
            ld = load(n, k)
            st = self._rng(f"mem/{n}")
            r = st["r"]
            v = st.get("v", 1500000000000 // 4096)
            vals = []
            for x in ld:
                v += r.randint(-2000, 2000) - int(200 * (x - 0.5))
                vals.append(str(v * 4096))
            st["v"] = v
            yield f'node_memory_MemAvailable_bytes{{instance="{self._node(n)}:9100",job="node"}} ', vals

        def hist(n, k):
            ld = load(n, k)
            st = self._rng(f"hist/{n}")
            r = st["r"]
            counts = st.get("c") or [0] * len(BUCKETS)
            ssum = st.get("s", 0.0)
            cols = [[] for _ in BUCKETS]
            scol = []
            # share of requests at or below each bound, busy and idle mixes
            busy_cdf = (0.01, 0.03, 0.1, 0.25, 0.5, 0.75, 0.9, 0.97, 0.995, 0.999, 1.0)
            idle_cdf = (0.05, 0.2, 0.5, 0.8, 0.93, 0.98, 0.995, 0.999, 1.0, 1.0, 1.0)
            ri = r.randint
            for x in ld:
                req = ri(0, 40) + int(400 * x)
                cdf = busy_cdf if x > 0.5 else idle_cdf
                for b in range(len(BUCKETS)):
                    counts[b] += int(req * cdf[b])
                counts[-1] = max(counts[-1], counts[-2])
                ssum += req * (0.08 if x > 0.5 else 0.02)
                for b in range(len(BUCKETS)):
                    cols[b].append(str(counts[b]))
                scol.append(f"{ssum:.3f}")
            st["c"], st["s"] = counts, ssum
            base = f'handler="/v1/infer",instance="{self._node(n)}:8080",job="inference"'
            for b, le in enumerate(BUCKETS):
                yield f'app_request_duration_seconds_bucket{{{base},le="{le}"}} ', cols[b]
            yield f"app_request_duration_seconds_sum{{{base}}} ", scol
            yield f"app_request_duration_seconds_count{{{base}}} ", cols[-1]

        return [
            ("DCGM_FI_DEV_GPU_TEMP", "gauge", gauge_walk("DCGM_FI_DEV_GPU_TEMP", 32, 84, 40, 1, True)),
            ("DCGM_FI_DEV_MEMORY_TEMP", "gauge", gauge_walk("DCGM_FI_DEV_MEMORY_TEMP", 36, 95, 45, 1, True)),
            ("DCGM_FI_DEV_GPU_UTIL", "gauge", util),
            ("DCGM_FI_DEV_FB_USED", "gauge", fb),
            ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter", energy),
            ("node_cpu_seconds", "counter", cpu),
            ("node_memory_MemAvailable_bytes", "gauge", mem),
            ("app_request_duration_seconds", "histogram", hist),
        ]


# ---------------------------------------------------------------------------
# loading and serving
# ---------------------------------------------------------------------------

EMPTY_CONFIG = "global:\n  scrape_interval: 15s\n  evaluation_interval: 1m\nscrape_configs: []\n"
RETENTION = "36500d"  # the data lies in 2024: no store may drop it by age


def write_empty_config(path, scrape_target=None):
    """The servers' prometheus.yml: no scraping, or (scrape_target
    "127.0.0.1:PORT") one job "stale" scraping it every 2 seconds."""
    with open(path, "w") as fh:
        if scrape_target is None:
            fh.write(EMPTY_CONFIG)
        else:
            fh.write(EMPTY_CONFIG.replace("scrape_configs: []\n", "scrape_configs:\n")
                     + f"  - job_name: stale\n    scrape_interval: 2s\n    scrape_timeout: 2s\n"
                       f"    static_configs:\n      - targets: ['{scrape_target}']\n")


def backfill(tool, om_path, data_dir, extra=(), timeout=900):
    """`<tool> tsdb create-blocks-from [extra] openmetrics om_path data_dir`
    (tool: promtool or kelvin). Raises RuntimeError with the tool's words."""
    cmd = [tool, "tsdb", "create-blocks-from", "-q", *extra, "openmetrics", om_path, data_dir]
    p = subprocess.run(cmd, capture_output=True, timeout=timeout)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: exit {p.returncode}: {p.stderr.decode('utf-8', 'replace')[-800:]}")
    return p


def prometheus_cmd(binary, data_dir, config, port, extra=()):
    return [binary, f"--config.file={config}", f"--storage.tsdb.path={data_dir}",
            f"--web.listen-address=127.0.0.1:{port}", f"--storage.tsdb.retention.time={RETENTION}",
            "--log.level=error", *extra]


def kelvin_server_cmd(binary, data_dir, config, port, extra=()):
    return [binary, "server", f"--config.file={config}", f"--storage.tsdb.path={data_dir}",
            f"--web.listen-address=127.0.0.1:{port}", f"--storage.tsdb.retention.time={RETENTION}",
            "--log.level=error", *extra]


def vm_cmd(binary, data_dir, port, extra=()):
    return [binary, f"-storageDataPath={data_dir}", f"-httpListenAddr=127.0.0.1:{port}", "-retentionPeriod=100y",
            "-loggerLevel=ERROR", *extra]


def vm_import(port, path, timeout=900):
    """Streams a text file (ms timestamps) into VictoriaMetrics."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout, blocksize=1 << 20)
    try:
        with open(path, "rb") as fh:
            conn.request("POST", "/api/v1/import/prometheus", body=fh,
                         headers={"Content-Type": "text/plain", "Content-Length": str(os.path.getsize(path))})
            resp = conn.getresponse()
            body = resp.read()
    finally:
        conn.close()
    if resp.status // 100 != 2:
        raise RuntimeError(f"VictoriaMetrics import of {path}: HTTP {resp.status}: {body[:300]!r}")


def fmt_time(t):
    """Seconds (float) as the API's Unix-seconds parameter, ms precision."""
    ms = int(round(t * 1000))
    return _om_ts(ms) if ms >= 0 else f"{ms / 1000:.3f}"


class Api:
    """A keep-alive HTTP/1.1 client for one server's query API. Each call
    returns (http status, body bytes, seconds); never raises on 4xx/5xx."""

    def __init__(self, port, timeout=60):
        self.port, self.timeout, self.conn = port, timeout, None

    def _conn(self):
        if self.conn is None:
            self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=self.timeout)
        return self.conn

    def close(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def request(self, method, path, params, discard=False):
        """discard: the body is read into one reused buffer and only its
        size returned (as the body, an int): a benchmark's timed runs, where
        allocating a fresh body of hundreds of MB costs the client more in
        page faults than the server spends answering."""
        body = urllib.parse.urlencode(params)
        for attempt in (0, 1):  # one retry on a connection the server closed
            try:
                c = self._conn()
                t0 = time.perf_counter()
                if method == "GET":
                    c.request("GET", path + "?" + body)
                else:
                    c.request("POST", path, body=body,
                              headers={"Content-Type": "application/x-www-form-urlencoded"})
                r = c.getresponse()
                if discard:
                    if getattr(self, "sink", None) is None:
                        self.sink = memoryview(bytearray(1 << 20))
                    data = 0
                    while True:
                        k = r.readinto(self.sink)
                        if not k:
                            break
                        data += k
                else:
                    data = r.read()
                dt = time.perf_counter() - t0
                if r.getheader("Connection", "").lower() == "close":
                    self.close()
                return r.status, data, dt
            except (http.client.HTTPException, ConnectionError, OSError):
                self.close()
                if attempt:
                    raise
        raise AssertionError("unreachable")

    def query(self, q, t, method="GET", extra=None):
        p = {"query": q, "time": t}
        p.update(extra or {})
        return self.request(method, "/api/v1/query", p)

    def query_range(self, q, start, end, step, method="POST", extra=None, discard=False):
        p = {"query": q, "start": start, "end": end, "step": step}
        p.update(extra or {})
        return self.request(method, "/api/v1/query_range", p, discard=discard)


def decode(body):
    """The JSON of an API answer, or None when it is not JSON."""
    try:
        return json.loads(body)
    except ValueError:
        return None
