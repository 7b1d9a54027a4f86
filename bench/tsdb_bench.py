#!/usr/bin/python3
"""bench/tsdb_bench.py -- Kelvin's storage engine next to Prometheus 2.42 and
VictoriaMetrics 1.79, on the same data in the same run (issue #3's table).

Data: the simulated GPU fleet from bench/tsdb_gen.c (8 simulated H100s per
node with dcgm-exporter's and Kelvin's GPU series, ~1,770 series a node with
a node_exporter-like host set), 15 s interval.

1. Bytes per sample on disk after compaction, index included. One
   OpenMetrics file (TSDB_BENCH_NODES nodes x TSDB_BENCH_HOURS hours) is
   backfilled with `promtool tsdb create-blocks-from openmetrics
   --max-block-duration=54h` and with Kelvin (`kelvin tsdb create-blocks-from
   openmetrics ... --max-block-duration=54h` when the binary has it, else
   bench_tsdb_ingest's backfill mode: the same head -> tsdb_block_write_head
   path). promtool rounds the maximum down to a compaction range (2 h x 3^k:
   24h would give 18 h blocks), so the data starts at 2024-01-01T12:00Z, a
   multiple of 54 h since the epoch, and up to 54 h of it is one block: the
   block Prometheus's compactor would make of it. The same samples, rendered
   as Prometheus text with ms timestamps by the same generator, are streamed
   into a running VictoriaMetrics (/api/v1/import/prometheus), then
   /internal/force_flush, /internal/force_merge, and a bounded wait until no
   merge is active and the directory size is stable. Sizes are the apparent
   bytes of every file under each output directory (VM: the whole
   -storageDataPath, indexdb included). Samples are counted once, by the
   generator. Where Kelvin's chunk bytes go, by metric, is printed too.
2. Memory per active series at the same moment of the same run:
   TSDB_BENCH_SCRAPE_NODES nodes (default 57, ~101k series) served by a
   Python HTTP server on 127.0.0.1 (one path per node, a new body every
   interval), scraped every TSDB_BENCH_SCRAPE_INTERVAL s (5) by Prometheus
   and by VictoriaMetrics (-promscrape.config, the same file), while
   bench_tsdb_ingest's scrape mode appends the same bodies into a Kelvin head
   with its WAL, at the same round times, for TSDB_BENCH_SCRAPES rounds (30).
   The three RSS (VmRSS) are read at one instant in every round; the mean
   over the second half of the rounds (Go heaps swing with GC, and
   VictoriaMetrics' RSS settles only after ~15 rounds: ~400 MiB after 10,
   ~170 MiB after 20 for 100k series) is divided by each one's own active
   series count, read at the end (Prometheus: prometheus_tsdb_head_series;
   VM: vm_cache_entries{type="storage/hour_metric_ids"}, the series seen this
   hour; Kelvin: its head's series count). Kelvin's per-module accounting
   (tsdb_head_stats) is printed too.
4. WAL replay after kill -9 (bench_tsdb_replay, see its header):
   TSDB_BENCH_REPLAY_SERIES (1,000,000) series x 2 h at 15 s written through
   the database with its size-triggered checkpoints, then the reopen timed
   (goal <= 10 s at 1M series). The write phase takes ~11 minutes here.
3. Appends per second on one core: bench_tsdb_ingest's append mode replays
   the file of part 1 (parsed into memory first) into a head with the WAL on
   (snappy on, as Prometheus's default), one appender thread, one commit per
   scrape.

Goals (issue #3): bytes/sample <= 0.7 x VictoriaMetrics; memory per series
<= 0.5 x VictoriaMetrics; >= 5 million appends/s.
BENCH_ONLY: "" or "tsdb" runs all four; tsdb-disk, tsdb-mem, tsdb-append,
tsdb-replay run one; anything else (host, soak) runs nothing here. Knobs (env):
TSDB_BENCH_NODES (2), TSDB_BENCH_HOURS (24), TSDB_BENCH_SCRAPE_NODES (57:
~100k series), TSDB_BENCH_SCRAPES (30), TSDB_BENCH_SCRAPE_INTERVAL (5),
TSDB_BENCH_APPEND_SAMPLES (0 = the whole file), TSDB_BENCH_PER_LINK (1; 0
leaves out DCGM's per-NVLink-link series, which are not in the metric
catalog), TSDB_BENCH_DIR (a parent for the temporary directory, default
$TMPDIR; part 1 needs ~2.5 GB a node-day there). The defaults take ~8
minutes on 2 cores. Loops are bounded in count and time; only 127.0.0.1 is
used; every process started is stopped on the way out, failure included.
"""
import http.client
import http.server
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

from benchlib import (BenchError, cleanup, cpu_seconds, free_port, http_get, log, metric_values, procs, start,
                      status_kib, stop, tail, wait_up)

KELVIN = os.environ.get("KELVIN_BIN", "build/kelvin")
BUILD = os.environ.get("KELVIN_BUILD_DIR", os.path.dirname(os.path.abspath(KELVIN)))
PEERS = os.environ.get("KELVIN_PEERS", "build/peers")
GEN = os.path.join(BUILD, "bench_tsdb_gen")
INGEST = os.path.join(BUILD, "bench_tsdb_ingest")
REPLAY = os.path.join(BUILD, "bench_tsdb_replay")
PROMETHEUS = os.path.join(PEERS, "bin", "prometheus")
PROMTOOL = os.path.join(PEERS, "bin", "promtool")
VM = os.path.join(PEERS, "bin", "victoria-metrics")

NODES = int(os.environ.get("TSDB_BENCH_NODES", "2"))
HOURS = float(os.environ.get("TSDB_BENCH_HOURS", "24"))
SCRAPES = int(os.environ.get("TSDB_BENCH_SCRAPES", "30"))
SCRAPE_INTERVAL = float(os.environ.get("TSDB_BENCH_SCRAPE_INTERVAL", "5"))
APPEND_SAMPLES = int(os.environ.get("TSDB_BENCH_APPEND_SAMPLES", "0"))
REPLAY_SERIES = int(os.environ.get("TSDB_BENCH_REPLAY_SERIES", "1000000"))
PER_LINK = os.environ.get("TSDB_BENCH_PER_LINK", "1")  # 0: no per-NVLink-link series (~104 a GPU, not ~158)
# ~100k active series by default: 1,767 series a node (1,335 without the per-link ones)
SCRAPE_NODES = int(os.environ.get("TSDB_BENCH_SCRAPE_NODES", "0")) or -(-100000 // (1767 if PER_LINK != "0" else 1335))
START_MS = 1704110400000  # 2024-01-01T12:00:00Z, a multiple of 54 h: up to 54 h of data is one block
BLOCK = "54h"
BLOCK_MS = 54 * 3600 * 1000


def run(cmd, timeout, what):
    """Runs cmd to completion (bounded); returns (stdout, wall s, CPU s of the child)."""
    t0 = time.time()
    r0 = os.times()
    p = start(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        stop(p)
        raise BenchError(f"{what} did not finish within {timeout} s")
    procs.remove(p)
    r1 = os.times()
    if p.returncode != 0:
        raise BenchError(f"{what} failed (exit {p.returncode}): {err.strip()[-800:]}")
    cpu = (r1.children_user - r0.children_user) + (r1.children_system - r0.children_system)
    return out, time.time() - t0, cpu


def dir_bytes(path):
    """Apparent size of every regular file under path."""
    total = 0
    for root, _, files in os.walk(path):
        for f in files:
            try:
                st = os.lstat(os.path.join(root, f))
            except OSError:
                continue
            if not os.path.islink(os.path.join(root, f)):
                total += st.st_size
    return total


def read_stats(path):
    st = {}
    with open(path) as f:
        for line in f:
            k, v = line.split()
            st[k] = int(v)
    return st


def kv(line):
    return {k: v for k, v in (w.split("=", 1) for w in line.split() if "=" in w)}


def gen_cmd(*args):
    """The generator's command line: the bench's start time and per-link choice, then args."""
    return [GEN, "--per-link", PER_LINK, "--start-ms", str(START_MS)] + [str(a) for a in args]


def fmt_int(n):
    return f"{n:,}"


# ---- 1. bytes per sample ------------------------------------------------------------------------------


def kelvin_has_backfill():
    try:
        p = subprocess.run([KELVIN, "tsdb", "--help"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return p.returncode == 0 and "create-blocks-from" in (p.stdout + p.stderr)


def vm_import(tmp, samples):
    data = os.path.join(tmp, "vm-data")
    port = free_port()
    vlog = os.path.join(tmp, "vm-import.log")
    with open(vlog, "w") as lf:
        vm = start([VM, f"-storageDataPath={data}", f"-httpListenAddr=127.0.0.1:{port}", "-retentionPeriod=100y",
                    "-loggerLevel=ERROR"], stderr=lf, stdout=lf)
    base = f"http://127.0.0.1:{port}"
    wait_up(base + "/health", vm, vlog, deadline=30)
    gen = start(gen_cmd("--nodes", NODES, "--hours", HOURS, "--format", "text"), stdout=subprocess.PIPE)
    t0, c0 = time.time(), cpu_seconds(vm.pid)
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600, blocksize=1 << 20)
    conn.request("POST", "/api/v1/import/prometheus", body=gen.stdout, headers={"Content-Type": "text/plain"})
    resp = conn.getresponse()
    body = resp.read()
    conn.close()
    gen.wait(60)
    procs.remove(gen)
    if resp.status // 100 != 2 or gen.returncode != 0:
        raise BenchError(f"VictoriaMetrics import: HTTP {resp.status} {body[:300]!r}, generator exit {gen.returncode}")
    # every row parsed and handed to storage (bounded wait)
    end = time.time() + 120
    while True:
        m = http_get(base + "/metrics")
        ins = sum(metric_values(m, "vm_rows_inserted_total").values())
        if ins >= samples or time.time() > end:
            break
        time.sleep(0.5)
    if ins != samples:
        raise BenchError(f"VictoriaMetrics took {ins:.0f} rows of {samples}")
    for path in ("/internal/force_flush", "/internal/force_merge"):
        try:
            http_get(base + path, 600)
        except Exception as e:
            raise BenchError(f"VictoriaMetrics {path}: {e}")
    # merges finish: no active merge, nothing pending, and a stable size for 3 polls (bounded)
    end, last, stable = time.time() + 300, -1, 0
    while time.time() < end:
        m = http_get(base + "/metrics")
        active = sum(metric_values(m, "vm_active_merges").values())
        pending = sum(metric_values(m, "vm_pending_rows").values())
        size = dir_bytes(data)
        stable = stable + 1 if (size == last and active == 0 and pending == 0) else 0
        last = size
        if stable >= 3:
            break
        time.sleep(1)
    wall, cpu = time.time() - t0, cpu_seconds(vm.pid) - c0
    m = http_get(base + "/metrics")
    parts = {k: v for k, v in metric_values(m, "vm_parts").items()}
    added = sum(metric_values(m, "vm_rows_added_to_storage_total").values())
    detail = {"data": dir_bytes(os.path.join(data, "data")), "indexdb": dir_bytes(os.path.join(data, "indexdb"))}
    size = dir_bytes(data)
    stop(vm)
    return size, wall, cpu, detail, parts, added, stable >= 3


def bytes_per_sample(tmp, res):
    om = os.path.join(tmp, "fleet.om")
    stats = os.path.join(tmp, "fleet.stats")
    est = NODES * 1770 * HOURS * 240 * 240  # ~240 bytes a line
    free = shutil.disk_usage(tmp).free
    if free < est * 1.3:
        raise BenchError(f"{tmp}: {free >> 20} MiB free, the data needs ~{int(est) >> 20} MiB (set TSDB_BENCH_DIR)")
    _, gw, _ = run(gen_cmd("--nodes", NODES, "--hours", HOURS, "--format", "openmetrics", "--out", om, "--stats",
                           stats), 900, "the generator")
    st = read_stats(stats)
    samples, series = st["samples"], st["series"]
    log(f"data: {NODES} nodes x {HOURS:g} h at 15 s: {fmt_int(series)} series, {fmt_int(samples)} samples, "
        f"OpenMetrics file {st['bytes'] / 1e9:.2f} GB (generated in {gw:.1f} s)")
    res["data"] = (NODES, HOURS, series, samples)

    # Prometheus: promtool backfill
    pdir = os.path.join(tmp, "prom-blocks")
    _, pw, pc = run([PROMTOOL, "tsdb", "create-blocks-from", "openmetrics", f"--max-block-duration={BLOCK}", om, pdir],
                    1800, "promtool tsdb create-blocks-from")
    pbytes = dir_bytes(pdir)
    pblocks = [d for d in os.listdir(pdir) if os.path.isdir(os.path.join(pdir, d))]
    log(f"  Prometheus 2.42 (promtool backfill, {len(pblocks)} block(s)): {fmt_int(pbytes)} bytes = "
        f"{pbytes / samples:.3f} B/sample ({pw:.1f} s, {pc:.1f} s CPU)")
    shutil.rmtree(pdir, ignore_errors=True)

    # Kelvin: the real command when it exists, else the bench's copy of that path
    kdir = os.path.join(tmp, "kelvin-blocks")
    if kelvin_has_backfill():
        how = "kelvin tsdb create-blocks-from"
        cmd = [KELVIN, "tsdb", "create-blocks-from", "openmetrics", om, kdir, f"--max-block-duration={BLOCK}"]
    else:
        how = "bench_tsdb_ingest backfill (kelvin tsdb create-blocks-from not built)"
        cmd = [INGEST, "backfill", om, kdir, "--max-block-duration-ms", str(BLOCK_MS)]
    out, kw, kc = run(cmd, 1800, how)
    kbytes = dir_bytes(kdir)
    kblocks = [d for d in os.listdir(kdir) if os.path.isdir(os.path.join(kdir, d))]
    kindex = sum(os.path.getsize(os.path.join(kdir, b, "index")) for b in kblocks
                 if os.path.exists(os.path.join(kdir, b, "index")))
    log(f"  Kelvin ({how}, {len(kblocks)} block(s)): {fmt_int(kbytes)} bytes = {kbytes / samples:.3f} B/sample "
        f"(index {kindex / samples:.3f}) ({kw:.1f} s, {kc:.1f} s CPU)")
    # where Kelvin's chunk bytes go, by metric name (per-link names folded)
    out, _, _ = run([INGEST, "blockstat", kdir], 600, "bench_tsdb_ingest blockstat")
    groups, total = {}, 0
    for line in out.splitlines():
        w = line.split()
        if w[0] != "family":
            continue
        a = kv(line)
        g = re.sub(r"_L\d+_", "_L*_", w[1])
        s0 = groups.setdefault(g, [0, 0])
        s0[0] += int(a["samples"])
        s0[1] += int(a["bytes"])
        total += int(a["bytes"])
    top = sorted(groups.items(), key=lambda x: -x[1][1])[:8]
    log("    Kelvin chunk bytes by metric (share, B/sample): " +
        ", ".join(f"{g} {b / total * 100:.0f}% {b / n:.2f}" for g, (n, b) in top))
    shutil.rmtree(kdir, ignore_errors=True)
    res["files"] = om

    # VictoriaMetrics: import, flush, merge
    vbytes, vw, vc, vdetail, vparts, vadded, vstable = vm_import(tmp, samples)
    log(f"  VictoriaMetrics 1.79 (import + force_flush + force_merge): {fmt_int(vbytes)} bytes = "
        f"{vbytes / samples:.3f} B/sample (data {vdetail['data'] / samples:.3f}, indexdb "
        f"{vdetail['indexdb'] / samples:.3f}; rows added {vadded:.0f}; {vw:.1f} s, {vc:.1f} s CPU"
        f"{'' if vstable else '; size still changing at the deadline'})")
    res["disk"] = (kbytes / samples, pbytes / samples, vbytes / samples)
    r = kbytes / vbytes
    log(f"  ratios: kelvin/VM {r:.3f} (goal <= 0.7: {'met' if r <= 0.7 else 'NOT met'}), "
        f"kelvin/Prometheus {kbytes / pbytes:.3f}")


# ---- 2. memory per active series --------------------------------------------------------------------------


class Targets:
    """Serves /node/NNNN: that node's body of the current round."""

    def __init__(self, bodies, nodes, rounds, interval):
        self.bodies, self.nodes, self.rounds, self.interval = bodies, nodes, rounds, interval
        self.t0 = None
        self.requests = 0
        owner = self

        class H(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                m = re.fullmatch(r"/node/(\d{4})", self.path)
                if not m or int(m.group(1)) >= owner.nodes:
                    self.send_error(404)
                    return
                k = owner.round_now()
                try:
                    with open(os.path.join(owner.bodies, str(k), f"node-{m.group(1)}.txt"), "rb") as f:
                        data = f.read()
                except OSError:
                    self.send_error(500)
                    return
                owner.requests += 1
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *a):
                pass

        self.srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.srv.daemon_threads = True
        self.port = self.srv.server_address[1]
        self.th = threading.Thread(target=self.srv.serve_forever, daemon=True)
        self.th.start()

    def round_now(self):
        if self.t0 is None:
            return 0
        return max(0, min(self.rounds - 1, int((time.time() - self.t0) / self.interval)))

    def close(self):
        self.srv.shutdown()
        self.srv.server_close()


def memory_per_series(tmp, res):
    rounds = SCRAPES + 3
    bodies = os.path.join(tmp, "bodies")
    run(gen_cmd("--nodes", SCRAPE_NODES, "--interval-ms", int(SCRAPE_INTERVAL * 1000), "--bodies", bodies,
                "--rounds", rounds, "--stats", os.path.join(tmp, "bodies.stats")), 600, "the generator (bodies)")
    st = read_stats(os.path.join(tmp, "bodies.stats"))
    per_node = st["series"] // SCRAPE_NODES
    expect = st["series"] + 5 * SCRAPE_NODES  # + up, scrape_* per target
    tg = Targets(bodies, SCRAPE_NODES, rounds, SCRAPE_INTERVAL)
    try:
        cfg = os.path.join(tmp, "scrape.yml")
        with open(cfg, "w") as f:
            # whole milliseconds: Prometheus's durations take no fractions
            f.write(f"global:\n  scrape_interval: {int(SCRAPE_INTERVAL * 1000)}ms\n  scrape_timeout: "
                    f"{int(SCRAPE_INTERVAL * 800)}ms\nscrape_configs:\n  - job_name: gpu-node\n"
                    "    static_configs:\n")
            for n in range(SCRAPE_NODES):
                f.write(f"      - targets: ['127.0.0.1:{tg.port}']\n        labels:\n"
                        f"          instance: node-{n:04d}\n          __metrics_path__: /node/{n:04d}\n")
        pport, vport = free_port(), free_port()
        plog, vlog = os.path.join(tmp, "prometheus.log"), os.path.join(tmp, "vm-scrape.log")
        with open(plog, "w") as pf, open(vlog, "w") as vf:
            prom = start([PROMETHEUS, f"--config.file={cfg}", f"--storage.tsdb.path={os.path.join(tmp, 'prom-data')}",
                          f"--web.listen-address=127.0.0.1:{pport}", "--log.level=error"], stdout=pf, stderr=pf)
            vm = start([VM, f"-storageDataPath={os.path.join(tmp, 'vm-scrape')}", f"-httpListenAddr=127.0.0.1:{vport}",
                        f"-promscrape.config={cfg}", "-loggerLevel=ERROR"], stdout=vf, stderr=vf)
        kel = start([INGEST, "scrape", os.path.join(tmp, "kelvin-wal")], stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE, text=True, bufsize=1)
        wait_up(f"http://127.0.0.1:{pport}/-/ready", prom, plog, deadline=30)
        wait_up(f"http://127.0.0.1:{vport}/health", vm, vlog, deadline=30)
        log(f"memory: {SCRAPE_NODES} nodes x {per_node} series (+5 per target), scraped every {SCRAPE_INTERVAL:g} s, "
            f"{SCRAPES} rounds")

        def kcmd(line):
            kel.stdin.write(line + "\n")
            kel.stdin.flush()
            ans = kel.stdout.readline().strip()
            if not ans or ans.startswith("error"):
                raise BenchError(f"bench_tsdb_ingest: {line!r} -> {ans!r}")
            return ans

        tg.t0 = time.time()
        kel_created = 0
        rss_rounds = []
        for k in range(SCRAPES):
            t_round = tg.t0 + k * SCRAPE_INTERVAL
            time.sleep(max(0, t_round - time.time()))
            ts = int(t_round * 1000)
            for n in range(SCRAPE_NODES):
                ans = kcmd(f"ingest {ts} node-{n:04d} {os.path.join(bodies, str(k), f'node-{n:04d}.txt')}")
                w = ans.split()
                kel_created += int(w[2])
                if kv(ans).get("duplicate", "0") != "0" or kv(ans).get("out_of_order", "0") != "0":
                    raise BenchError(f"Kelvin rejected samples: {ans}")
            # the three RSS at one instant in the second half of every round
            # (Go's heaps swing with GC; the later rounds are averaged)
            time.sleep(max(0, t_round + 0.6 * SCRAPE_INTERVAL - time.time()))
            if k >= SCRAPES // 2:
                rss_rounds.append((status_kib(prom.pid, "VmRSS"), status_kib(vm.pid, "VmRSS"),
                                   status_kib(kel.pid, "VmRSS")))
        # the end of the last round, then (bounded) until both peers have
        # stored SCRAPES scrapes of every target: the same work as Kelvin's
        time.sleep(max(0, tg.t0 + SCRAPES * SCRAPE_INTERVAL - time.time()))
        end = time.time() + 3 * SCRAPE_INTERVAL
        while time.time() < end:
            p_app = sum(metric_values(http_get(f"http://127.0.0.1:{pport}/metrics"),
                                      "prometheus_tsdb_head_samples_appended_total").values())
            v_rows = sum(v for k2, v in metric_values(http_get(f"http://127.0.0.1:{vport}/metrics"),
                                                      "vm_rows_inserted_total").items() if "promscrape" in k2)
            if p_app >= SCRAPES * expect and v_rows >= SCRAPES * expect:
                break
            time.sleep(0.2)
        # the same moment: series counts and RSS of the three within a second
        t_meas = time.time()
        pm = http_get(f"http://127.0.0.1:{pport}/metrics")
        vmm = http_get(f"http://127.0.0.1:{vport}/metrics")
        kst = kv(kcmd("stats"))
        rss = {"p": status_kib(prom.pid, "VmRSS"), "v": status_kib(vm.pid, "VmRSS"), "k": status_kib(kel.pid, "VmRSS")}
        hwm = {"p": status_kib(prom.pid, "VmHWM"), "v": status_kib(vm.pid, "VmHWM"), "k": status_kib(kel.pid, "VmHWM")}
        t_meas = time.time() - t_meas
        p_series = sum(metric_values(pm, "prometheus_tsdb_head_series").values())
        p_samples = sum(metric_values(pm, "prometheus_tsdb_head_samples_appended_total").values())
        hour = metric_values(vmm, "vm_cache_entries").get('{type="storage/hour_metric_ids"}', 0)
        created = sum(metric_values(vmm, "vm_new_timeseries_created_total").values())
        v_series = hour if hour > 0 else created
        v_rows = sum(v for k2, v in metric_values(vmm, "vm_rows_inserted_total").items() if "promscrape" in k2)
        k_series = int(kst["series"])
        kcmd("quit")
    finally:
        tg.close()
    for p in (prom, vm, kel):
        stop(p)
    log(f"  measured within {t_meas:.2f} s, {tg.requests} target requests served")
    log(f"  active series: Prometheus {p_series:.0f} (samples appended {p_samples:.0f}), VictoriaMetrics "
        f"{v_series:.0f} (hour_metric_ids {hour:.0f}, created {created:.0f}, rows {v_rows:.0f}), Kelvin {k_series} "
        f"(created {kel_created}; expected {expect})")
    for name, n in (("Prometheus", p_series), ("VictoriaMetrics", v_series), ("Kelvin", k_series)):
        if abs(n - expect) > expect * 0.02:
            raise BenchError(f"{name} holds {n:.0f} series, expected {expect}: scrapes failed or the count is wrong")
    at_end = {"p": rss["p"] * 1024 / p_series, "v": rss["v"] * 1024 / v_series, "k": rss["k"] * 1024 / k_series}
    n_avg = len(rss_rounds)
    per = {"p": sum(r[0] for r in rss_rounds) * 1024 / n_avg / p_series,
           "v": sum(r[1] for r in rss_rounds) * 1024 / n_avg / v_series,
           "k": sum(r[2] for r in rss_rounds) * 1024 / n_avg / k_series}
    log(f"  RSS at the end: Prometheus {rss['p'] / 1024:.1f} MiB (peak {hwm['p'] / 1024:.1f}), VictoriaMetrics "
        f"{rss['v'] / 1024:.1f} MiB (peak {hwm['v'] / 1024:.1f}), Kelvin {rss['k'] / 1024:.1f} MiB "
        f"(peak {hwm['k'] / 1024:.1f}); per series {at_end['p']:.0f} / {at_end['v']:.0f} / {at_end['k']:.0f} B")
    log("  RSS MiB at those instants, Prometheus/VM/Kelvin: " +
        " ".join(f"{a / 1024:.0f}/{b / 1024:.0f}/{c / 1024:.0f}" for a, b, c in rss_rounds))
    log(f"  per active series, mean of {n_avg} instants (rounds {SCRAPES - n_avg + 1}-{SCRAPES}): Prometheus "
        f"{per['p']:.0f} B, VictoriaMetrics {per['v']:.0f} B, Kelvin {per['k']:.0f} B")
    r = per["k"] / per["v"]
    log(f"  ratios: kelvin/VM {r:.3f} (goal <= 0.5: {'met' if r <= 0.5 else 'NOT met'}), kelvin/Prometheus "
        f"{per['k'] / per['p']:.3f}")
    ks = k_series or 1
    acct = {k2: int(kst[k2]) for k2 in ("bytes_series", "bytes_chunks", "bytes_index", "bytes_labels", "bytes_total")}
    log("  Kelvin's own accounting per series (tsdb_head_stats): " +
        ", ".join(f"{k2[6:]} {v / ks:.0f} B" for k2, v in acct.items()) +
        f"; the rest of the RSS ({(rss['k'] * 1024 - acct['bytes_total']) / ks:.0f} B/series) is malloc overhead, "
        "WAL buffers, code and the C library")
    res["mem"] = (per["k"], per["p"], per["v"], acct, ks)


# ---- 3. appends per second ----------------------------------------------------------------------------------


def append_speed(tmp, res):
    om = res.get("files") or os.path.join(tmp, "fleet.om")
    if not os.path.exists(om):
        run(gen_cmd("--nodes", NODES, "--hours", HOURS, "--format", "openmetrics", "--out", om), 900, "the generator")
    cmd = [INGEST, "append", om, os.path.join(tmp, "append-wal")]
    if APPEND_SAMPLES > 0:
        cmd += ["--max-samples", str(APPEND_SAMPLES)]
    out, _, _ = run(cmd, 1800, "bench_tsdb_ingest append")
    a = kv(next(l for l in out.splitlines() if l.startswith("append ")))
    per_s, per_cpu = float(a["per_s"]), float(a["per_cpu_s"])
    log(f"appends: {fmt_int(int(a['samples']))} samples in {fmt_int(int(a['scrapes']))} commits (one per scrape), "
        f"{fmt_int(int(a['series']))} series, WAL on (snappy), one appender thread")
    log(f"  {per_s / 1e6:.2f} M samples/s wall ({a['wall_s']} s), {per_cpu / 1e6:.2f} M samples per CPU-second "
        f"(process CPU incl. the WAL write, {a['cpu_s']} s)   goal >= 5 M -> {'met' if per_cpu >= 5e6 else 'NOT met'}")
    shutil.rmtree(os.path.join(tmp, "append-wal"), ignore_errors=True)
    res["append"] = (per_s, per_cpu)


# ---- 4. WAL replay after kill -9 --------------------------------------------------------------------------


def replay_time(tmp, res):
    """bench_tsdb_replay writes REPLAY_SERIES x 480 samples (2 h at 15 s) through the database, with the
    maintenance round taking its size-triggered checkpoints as the server would, abandons the process
    state as kill -9 does (closing writes nothing replay uses), and times the reopen."""
    d = os.path.join(tmp, "replay")
    out, _, _ = run([REPLAY, "-n", str(REPLAY_SERIES), "-s", "480", "-d", d], 3600, "bench_tsdb_replay")
    for line in out.splitlines():
        log("  " + line)
    m = re.search(r"replayed in ([0-9.]+) s \(([0-9.]+) CPU s\)", out)
    if not m or "WRONG" in out:
        raise BenchError(f"bench_tsdb_replay: unexpected output: {out!r}")
    secs = float(m.group(1))
    log(f"  replay of {fmt_int(REPLAY_SERIES)} series x 2 h: {secs:.2f} s   goal <= 10 s (1M series) -> "
        f"{'met' if secs <= 10 else 'NOT met'}")
    shutil.rmtree(d, ignore_errors=True)
    res["replay"] = (secs, float(m.group(2)))


def summary(res):
    log("")
    log("storage summary")
    log("| figure | kelvin | Prometheus 2.42 | VictoriaMetrics 1.79 | kelvin/VM | kelvin/Prom | goal |")
    log("|---|---|---|---|---|---|---|")
    if "disk" in res:
        k, p, v = res["disk"]
        n, h, series, samples = res["data"]
        verdict = "met" if k <= 0.7 * v else "NOT met"
        log(f"| bytes/sample on disk after compaction, index incl. ({n} nodes x {h:g} h, {fmt_int(samples)} "
            f"samples) | {k:.3f} | {p:.3f} | {v:.3f} | {k / v:.3f} | {k / p:.3f} | <= 0.7 x VM: {verdict} |")
    if "mem" in res:
        k, p, v, acct, ks = res["mem"]
        log(f"| memory per active series, RSS ({fmt_int(ks)} series) | {k:.0f} B | {p:.0f} B | {v:.0f} B | "
            f"{k / v:.3f} | {k / p:.3f} | <= 0.5 x VM: {'met' if k <= 0.5 * v else 'NOT met'} |")
        parts = ", ".join(f"{k2[6:]} {val / ks:.0f}" for k2, val in acct.items())
        log(f"| kelvin head accounting per series | {parts} B | | | | | |")
    if "replay" in res:
        secs, cpu = res["replay"]
        log(f"| WAL replay after kill -9, {fmt_int(REPLAY_SERIES)} series x 2 h | {secs:.2f} s ({cpu:.2f} CPU s) "
            f"| | | | | <= 10 s: {'met' if secs <= 10 else 'NOT met'} |")
    if "append" in res:
        w, c = res["append"]
        log(f"| appends/s, one appender thread, WAL on | {w / 1e6:.2f} M/s wall, {c / 1e6:.2f} M per CPU-s "
            f"| | | | | >= 5 M: {'met' if c >= 5e6 else 'NOT met'} |")


def main():
    only = os.environ.get("BENCH_ONLY", "")
    every = ("disk", "mem", "append", "replay")
    parts = {"": every, "tsdb": every, "tsdb-disk": ("disk",), "tsdb-mem": ("mem",), "tsdb-append": ("append",),
             "tsdb-replay": ("replay",)}.get(only)
    if not parts:
        return 0
    for b in (GEN, INGEST, REPLAY, PROMETHEUS, PROMTOOL, VM):
        if not os.access(b, os.X_OK):
            raise SystemExit(f"tsdb bench: {b} missing (build the bench_* targets; run scripts/peers)")
    log(f"kelvin storage benchmark ({time.strftime('%Y-%m-%d %H:%M:%S')}, {os.cpu_count()} CPUs)")
    tmp = tempfile.mkdtemp(prefix="kelvin-tsdb-bench-", dir=os.environ.get("TSDB_BENCH_DIR"))
    res = {}
    old = signal.signal(signal.SIGTERM, lambda *a: sys.exit(143))
    rc = 0
    try:
        if "disk" in parts:
            bytes_per_sample(tmp, res)
        if "append" in parts:
            append_speed(tmp, res)
        if res.get("files"):
            os.unlink(res["files"])
        if "mem" in parts:
            memory_per_series(tmp, res)
        if "replay" in parts:
            replay_time(tmp, res)
    except BenchError as e:
        print(f"tsdb bench: {e}", file=sys.stderr, flush=True)
        rc = 1
    finally:
        cleanup()
        signal.signal(signal.SIGTERM, old)
        shutil.rmtree(tmp, ignore_errors=True)
    summary(res)
    return rc


if __name__ == "__main__":
    sys.exit(main())
