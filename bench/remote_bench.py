#!/usr/bin/python3
"""bench/remote_bench.py -- remote write out: `kelvin server` next to Prometheus
2.42, both scraping the same simulated fleet at the same time and
remote-writing it to VictoriaMetrics 1.79 (issue #7's benchmark).

The fleet: one `kelvin sim fleet` of REMOTE_BENCH_NODES nodes (50, ~1,000
series each: 8 simulated H100s with dcgm-exporter's and kelvin_gpu_* series
plus node_exporter's host series), values changing every
REMOTE_BENCH_INTERVAL seconds (1), listed in a file_sd file. Both servers read
the same scrape configuration (file_sd, scrape_interval = the interval) and
run at the same time, each with a fresh data directory; with remote write
each sends to its own VictoriaMetrics (so one's backlog can drain while the
other's receiver is still away), with the default queue_config.

1. CPU of remote write. Run A: both servers WITHOUT remote_write; after two
   full rounds, CPU seconds (every thread, /proc schedstat) and samples
   ingested (kelvin_tsdb_head_samples_appended_total,
   prometheus_tsdb_head_samples_appended_total) over REMOTE_BENCH_SECONDS
   (60). Run B: fresh servers WITH remote_write, the same window after the
   queues have started sending. The remote-write cost of a server is
     cpu_B - (cpu_A / ingested_A) x ingested_B
   (its CPU minus what ingesting run B's samples cost it in run A), divided
   by the samples it sent in run B's window
   (prometheus_remote_storage_samples_total{remote_name="vm"}, which both
   count per attempt; VictoriaMetrics answers every request in this run).
   Figure: CPU seconds per million samples sent; goal kelvin <= 0.3 x
   Prometheus.
2. Drain of a 1-hour backlog. "1 hour of a typical 100-node fleet" is taken
   as 100 nodes x ~1,000 series scraped every 30 s: 12 million samples an
   hour (REMOTE_BENCH_BACKLOG, in samples). The backlog is built fast, not in
   an hour: right after run B's window both VictoriaMetrics are stopped
   while the servers keep scraping the fleet (NODES x ~1,000 / INTERVAL
   samples a second each) until each has ingested REMOTE_BENCH_BACKLOG
   samples since the stop (so the WAL holds as many samples as an hour of the
   typical fleet would have put there; the series are the bench fleet's).
   Then the fleet is stopped: the typical fleet's live load after an outage
   (3,300 samples/s) is small against its backlog, while the bench fleet's
   (~50,000/s) would swamp the drain; the servers go on scraping its dead
   targets (up, scrape_* and one round of staleness markers). Then each
   server's VictoriaMetrics comes back, one after the other, and the server
   is timed until its queue has caught up:
   queue_highest_sent_timestamp_seconds at or past the receiver's return and
   samples_pending under NODES x 10 (highest_timestamp_in_seconds -
   queue_highest_sent_timestamp_seconds, the lag to alert on, back to about
   a scrape interval). Reported: drain time, the sender's CPU seconds during
   the drain, per million backlog samples, its peak RSS (VmHWM), and the
   receiver's CPU (when the receiver saturates, the drain time says more
   about it than about the sender; CPU per backlog sample does not).

Reproduce: `BENCH_ONLY=remote bench/run build` (or `KELVIN_BIN=build/kelvin
KELVIN_PEERS=build/peers bench/remote_bench.py`), on an otherwise quiet
machine. Knobs (env): REMOTE_BENCH_NODES (50), REMOTE_BENCH_INTERVAL (1,
seconds), REMOTE_BENCH_SECONDS (60), REMOTE_BENCH_BACKLOG (12000000),
REMOTE_BENCH_SERVERS (prometheus,kelvin: which senders run),
REMOTE_BENCH_DRAIN_LIMIT (300, seconds: the longest one drain may take),
REMOTE_BENCH_LOG_LEVEL (error: the servers' --log.level), REMOTE_BENCH_KEEP
(1: keep the temporary directory with the logs and data).
Takes about 2 x (SECONDS + 30) + BACKLOG / (NODES x 1,000 / INTERVAL) + the
drains: ~9 minutes with the defaults. Loops are bounded in count and time;
only 127.0.0.1 is used; every process is stopped on the way out, failure
included. Exit status: 0 when every sender asked for ran and drained (goals
are reported, not enforced), 1 otherwise.
BENCH_ONLY: "" or "remote" runs it (anything else runs nothing here).
"""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from benchlib import (BenchError, cleanup, cpu_seconds, free_port, http_get, log, metric_values, start, start_fleet, status_kib,
                      stop, tail, wait_up)

KELVIN = os.path.abspath(os.environ.get("KELVIN_BIN", "build/kelvin"))
PEERS = os.path.abspath(os.environ.get("KELVIN_PEERS", "build/peers"))
PROMETHEUS = os.path.join(PEERS, "bin", "prometheus")
VM = os.path.join(PEERS, "bin", "victoria-metrics")

NODES = int(os.environ.get("REMOTE_BENCH_NODES", "50"))
INTERVAL = float(os.environ.get("REMOTE_BENCH_INTERVAL", "1"))
SECONDS = float(os.environ.get("REMOTE_BENCH_SECONDS", "60"))
BACKLOG = float(os.environ.get("REMOTE_BENCH_BACKLOG", "12000000"))
DRAIN_LIMIT = float(os.environ.get("REMOTE_BENCH_DRAIN_LIMIT", "300"))
LOG_LEVEL = os.environ.get("REMOTE_BENCH_LOG_LEVEL", "error")
KEEP = os.environ.get("REMOTE_BENCH_KEEP", "") not in ("", "0")
SERVERS = [s.strip() for s in os.environ.get("REMOTE_BENCH_SERVERS", "prometheus,kelvin").split(",") if s.strip()]

TITLES = {"prometheus": "Prometheus 2.42", "kelvin": "kelvin server"}
RS = "prometheus_remote_storage_"
HOUR_OF_TYPICAL = 100 * 1000 / 30 * 3600  # samples: 1 hour of 100 nodes x 1,000 series every 30 s


def kelvin_has_sender():
    try:
        r = subprocess.run([KELVIN, "server", "--help"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return r.returncode == 0 and "storage.remote.flush-deadline" in r.stdout + r.stderr


def one(text, name, **labels):
    """Sum of the samples of name whose labels include labels (None if none)."""
    want = [f'{k}="{v}"' for k, v in labels.items()]
    vals = [v for k, v in metric_values(text, name).items() if all(w in k for w in want)]
    return sum(vals) if vals else None


def ingested(key, text):
    name = "kelvin_tsdb_head_samples_appended_total" if key == "kelvin" else \
        "prometheus_tsdb_head_samples_appended_total"
    return one(text, name)


class Server:
    def __init__(self, key, tmp, cfg, tag):
        self.key, self.tag = key, tag
        self.port = free_port()
        self.data = tempfile.mkdtemp(prefix=f"{key}-{tag}-", dir=tmp)
        self.log = os.path.join(tmp, f"{key}-{tag}.log")
        self.fh = open(self.log, "w")
        base = [PROMETHEUS] if key == "prometheus" else [KELVIN, "server"]
        cmd = base + [f"--config.file={cfg}", f"--storage.tsdb.path={self.data}",
                      f"--web.listen-address=127.0.0.1:{self.port}", f"--log.level={LOG_LEVEL}"]
        self.p = start(cmd, stdout=self.fh, stderr=self.fh, cwd=tmp)
        self.url = f"http://127.0.0.1:{self.port}"

    def metrics(self):
        if self.p.poll() is not None:
            raise BenchError(f"{TITLES[self.key]} exited with {self.p.returncode}: {tail(self.log)}")
        return http_get(self.url + "/metrics", 30)

    def cpu(self):
        return cpu_seconds(self.p.pid)

    def close(self):
        stop(self.p)
        self.fh.close()
        if not KEEP:
            shutil.rmtree(self.data, ignore_errors=True)


class Victoria:
    def __init__(self, tmp, key):
        self.port = free_port()
        self.data = os.path.join(tmp, f"vm-{key}-data")
        self.log = os.path.join(tmp, f"vm-{key}.log")
        self.p = None

    def start(self):
        fh = open(self.log, "a")
        self.p = start([VM, f"-httpListenAddr=127.0.0.1:{self.port}", f"-storageDataPath={self.data}",
                        "-retentionPeriod=100y", "-loggerLevel=ERROR"], stdout=fh, stderr=fh)
        wait_up(f"http://127.0.0.1:{self.port}/health", self.p, self.log)

    def stop(self):
        stop(self.p, timeout=60)

    def cpu(self):
        return cpu_seconds(self.p.pid) if self.p is not None and self.p.poll() is None else 0.0


def write_config(tmp, sd, key, vm_port):
    cfg = os.path.join(tmp, f"{key}-{'rw' if vm_port else 'plain'}.yml")
    with open(cfg, "w") as f:
        f.write("global:\n"
                f"  scrape_interval: {int(INTERVAL * 1000)}ms\n"
                f"  scrape_timeout: {int(min(INTERVAL, 10) * 1000)}ms\n"
                f"  external_labels:\n    sender: {key}\n"
                "scrape_configs:\n  - job_name: fleet\n"
                f"    file_sd_configs:\n      - files: ['{sd}']\n")
        if vm_port:
            f.write(f"remote_write:\n  - url: http://127.0.0.1:{vm_port}/api/v1/write\n    name: vm\n")
    return cfg


def warm_up(servers, want, rw):
    """Until every server has ingested `want` samples (and, with rw, sent some)."""
    end = time.time() + 6 * INTERVAL + 120
    while time.time() < end:
        ok = True
        for s in servers:
            t = s.metrics()
            got = ingested(s.key, t)
            if got is None or got < want or (rw and not one(t, RS + "samples_total", remote_name="vm")):
                ok = False
        if ok:
            return
        time.sleep(1)
    raise BenchError("the servers did not warm up in time: " +
                     "; ".join(f"{s.key}: {tail(s.log, 300)}" for s in servers))


def measure(servers, rw):
    """CPU, ingested and sent over SECONDS, every server at once."""
    t0 = time.time()
    first = {s.key: (s.cpu(), s.metrics()) for s in servers}
    time.sleep(max(0.0, t0 + SECONDS - time.time()))
    out = {}
    for s in servers:
        c1, m1 = s.cpu(), s.metrics()
        c0, m0 = first[s.key]
        r = {"cpu": c1 - c0, "ingested": ingested(s.key, m1) - ingested(s.key, m0), "wall": time.time() - t0}
        if rw:
            r["sent"] = one(m1, RS + "samples_total", remote_name="vm") - one(m0, RS + "samples_total",
                                                                           remote_name="vm")
            r["failed"] = (one(m1, RS + "samples_failed_total", remote_name="vm") or 0) - \
                (one(m0, RS + "samples_failed_total", remote_name="vm") or 0)
        out[s.key] = r
    return out


def drain(servers, vms, fleet):
    """Stops every VictoriaMetrics until each server has BACKLOG samples
    behind it, stops the fleet, then brings back one server's
    VictoriaMetrics at a time and times that server's catch-up."""
    base = {s.key: ingested(s.key, s.metrics()) for s in servers}
    for vm in vms.values():
        vm.stop()
    t_stop = time.time()
    limit = t_stop + BACKLOG / max(1.0, NODES * 900 / INTERVAL) * 2 + 120
    while time.time() < limit:
        if all(ingested(s.key, s.metrics()) - base[s.key] >= BACKLOG for s in servers):
            break
        time.sleep(1)
    else:
        raise BenchError(f"the servers did not ingest {BACKLOG:,.0f} samples during the outage in time")
    # the live load of the typical fleet (3,300 samples/s) is next to nothing
    # against the backlog: stop the bench fleet's (the servers go on scraping
    # its 100 dead targets: up, scrape_* and one round of staleness markers)
    stop(fleet)
    time.sleep(2 * INTERVAL + 1)
    backlog = {s.key: ingested(s.key, s.metrics()) - base[s.key] for s in servers}
    outage = time.time() - t_stop
    log(f"  outage of {outage:.0f} s: backlog {', '.join(f'{k} {v:,.0f}' for k, v in backlog.items())} samples;"
        " fleet stopped")
    res, ctx = {}, {"outage": outage}
    for s in servers:
        vm = vms[s.key]
        vm.start()
        t_back = time.time()
        c0, vm_c0 = s.cpu(), vm.cpu()
        while time.time() < t_back + DRAIN_LIMIT:
            t = s.metrics()
            hi = one(t, RS + "queue_highest_sent_timestamp_seconds", remote_name="vm") or 0
            pend = one(t, RS + "samples_pending", remote_name="vm") or 0
            if hi >= t_back and pend < NODES * 10:
                top = one(t, RS + "highest_timestamp_in_seconds") or 0
                res[s.key] = {"drain_s": time.time() - t_back, "cpu": s.cpu() - c0,
                              "backlog": backlog[s.key], "lag": top - hi, "hwm": status_kib(s.p.pid, "VmHWM"),
                              "failed": one(t, RS + "samples_failed_total", remote_name="vm") or 0,
                              "dropped": one(t, RS + "samples_dropped_total", remote_name="vm") or 0,
                              "vm_cpu": vm.cpu() - vm_c0}
                break
            time.sleep(0.5)
        else:
            log(f"  {TITLES[s.key]}: did not drain within {DRAIN_LIMIT:.0f} s")
        if s.key in res:
            log(f"  {TITLES[s.key]}: drained in {res[s.key]['drain_s']:.1f} s")
    return res, ctx


def report(a, b, d, ctx, per_node):
    log("")
    log(f"remote write benchmark: {NODES} nodes x {per_node} series every {INTERVAL:g} s "
        f"(~{NODES * per_node / INTERVAL:,.0f} samples/s per server), {SECONDS:g} s windows, "
        f"{os.cpu_count()} CPUs")
    log("| sender | CPU s without rw | CPU s with rw | remote-write CPU s | samples sent | "
        "CPU s per million sent |")
    log("|---|---|---|---|---|---|")
    per_m = {}
    for key in SERVERS:
        if key not in a or key not in b:
            log(f"| {TITLES[key]} | not run | | | | |")
            continue
        ra, rb = a[key], b[key]
        base = ra["cpu"] / ra["ingested"] * rb["ingested"] if ra["ingested"] else float("nan")
        cost = rb["cpu"] - base
        per_m[key] = cost / rb["sent"] * 1e6 if rb["sent"] else float("nan")
        log(f"| {TITLES[key]} | {ra['cpu']:.2f} ({ra['ingested']:,.0f} ingested) | {rb['cpu']:.2f} "
            f"({rb['ingested']:,.0f} ingested) | {cost:.2f} | {rb['sent']:,.0f} | {per_m[key]:.3f} |")
    if "kelvin" in per_m and "prometheus" in per_m:
        r = per_m["kelvin"] / per_m["prometheus"]
        log(f"  remote-write CPU per sample sent, kelvin/Prometheus {r:.3f} "
            f"(goal <= 0.3: {'met' if r <= 0.3 else 'NOT met'})")
    for key in SERVERS:
        if b.get(key, {}).get("failed"):
            log(f"  {TITLES[key]}: {b[key]['failed']:,.0f} samples failed during the window")
    if not d:
        return
    log("")
    log(f"drain of a backlog of {BACKLOG:,.0f} samples ({BACKLOG / HOUR_OF_TYPICAL:.2g} h of 100 nodes x 1,000 "
        "series every 30 s), "
        f"built in an outage of {ctx['outage']:.0f} s; each sender drains into its own VictoriaMetrics, one "
        "after the other, the fleet stopped")
    log("| sender | backlog samples | drain time | CPU s during the drain | CPU s per million backlog samples | "
        "lag at the end | peak RSS |")
    log("|---|---|---|---|---|---|---|")
    for key in SERVERS:
        r = d.get(key)
        if not r:
            log(f"| {TITLES[key]} | not drained | | | | | |")
            continue
        log(f"| {TITLES[key]} | {r['backlog']:,.0f} | {r['drain_s']:.1f} s | {r['cpu']:.2f} | "
            f"{r['cpu'] / r['backlog'] * 1e6:.3f} | {r['lag']:.0f} s | {r['hwm'] / 1024:.0f} MiB |")
    if "kelvin" in d and "prometheus" in d:
        k, p = d["kelvin"], d["prometheus"]
        log(f"  drain time kelvin/Prometheus {k['drain_s'] / p['drain_s']:.3f}; CPU per backlog sample "
            f"{(k['cpu'] / k['backlog']) / (p['cpu'] / p['backlog']):.3f}")
    for key in SERVERS:
        r = d.get(key)
        if r and (r["failed"] or r["dropped"]):
            log(f"  {TITLES[key]}: samples failed {r['failed']:,.0f}, dropped {r['dropped']:,.0f}")
    for key in SERVERS:
        r = d.get(key)
        if r:
            log(f"  {TITLES[key]}'s VictoriaMetrics used {r['vm_cpu']:.1f} CPU s during its drain "
                f"({100 * r['vm_cpu'] / max(r['drain_s'], 1e-9):.0f} % of a core)")


def main():
    if os.environ.get("BENCH_ONLY", "") not in ("", "remote"):
        return 0
    for key in SERVERS:
        if key not in TITLES:
            raise SystemExit(f"remote bench: unknown REMOTE_BENCH_SERVERS entry {key!r} (prometheus, kelvin)")
    for path in (PROMETHEUS, VM):
        if not os.access(path, os.X_OK):
            raise SystemExit(f"remote bench: {path} missing (run scripts/peers)")
    if not os.access(KELVIN, os.X_OK):
        raise SystemExit(f"remote bench: {KELVIN} missing (set KELVIN_BIN)")
    log(f"kelvin remote write benchmark ({time.strftime('%Y-%m-%d %H:%M:%S')}, {os.cpu_count()} CPUs)")
    keys = list(SERVERS)
    rc = 0
    if "kelvin" in keys and not kelvin_has_sender():
        log(f"  kelvin server: not run ({KELVIN} has no remote-write sender yet)")
        keys.remove("kelvin")
        rc = 1
    tmp = tempfile.mkdtemp(prefix="kelvin-remote-bench-")
    old = signal.signal(signal.SIGTERM, lambda *a: sys.exit(143))
    a, b, d, ctx, per_node = {}, {}, {}, {}, 0
    try:
        fleet, _, sd, per_node = start_fleet(KELVIN, tmp, NODES, INTERVAL)
        want = 2 * NODES * per_node
        log(f"  fleet: {NODES} nodes x {per_node} series; run A (no remote write), {SECONDS:g} s ...")
        servers = [Server(k, tmp, write_config(tmp, sd, k, None), "plain") for k in keys]
        for s in servers:
            wait_up(s.url + "/-/ready", s.p, s.log)
        warm_up(servers, want, False)
        a = measure(servers, False)
        for s in servers:
            s.close()
        vms = {k: Victoria(tmp, k) for k in keys}
        for vm in vms.values():
            vm.start()
        log(f"  run B (remote write, each server to its own VictoriaMetrics), {SECONDS:g} s ...")
        servers = [Server(k, tmp, write_config(tmp, sd, k, vms[k].port), "rw") for k in keys]
        for s in servers:
            wait_up(s.url + "/-/ready", s.p, s.log)
        warm_up(servers, want, True)
        b = measure(servers, True)
        log(f"  backlog of {BACKLOG:,.0f} samples: VictoriaMetrics stopped ...")
        d, ctx = drain(servers, vms, fleet)
    except BenchError as e:
        print(f"remote bench: {e}", file=sys.stderr, flush=True)
        rc = 1
    finally:
        cleanup()
        signal.signal(signal.SIGTERM, old)
        if KEEP:
            log(f"  kept {tmp} (logs, data)")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    if a or b:
        report(a, b, d, ctx, per_node)
    if any(k not in d for k in keys):
        rc = 1
    return rc


if __name__ == "__main__":
    sys.exit(main())
