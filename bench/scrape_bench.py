#!/usr/bin/python3
"""bench/scrape_bench.py -- `kelvin server` ingestion next to Prometheus 2.42 and
VictoriaMetrics 1.79, scraping the same simulated fleet (issue #4's table).

The fleet: one `kelvin sim fleet` process serving SCRAPE_BENCH_NODES nodes
(200) of ~1,000 series each (8 simulated H100s with dcgm-exporter's and
kelvin_gpu_* series, and node_exporter's host series), one node per path,
values updated every SCRAPE_BENCH_INTERVAL seconds (5), listed in a file_sd
file. Each scraper reads the same prometheus.yml (file_sd_configs over that
file, scrape_interval = SCRAPE_BENCH_INTERVAL), one at a time so they never
fight for the CPUs, each with a fresh temporary data directory:

  Prometheus       --config.file --storage.tsdb.path --web.listen-address
  VictoriaMetrics  -promscrape.config -storageDataPath -httpListenAddr
  kelvin server    --config.file --storage.tsdb.path --web.listen-address

Each run: start, wait until two full rounds are in (every series created:
the steady state is measured, not the first round's series creation), then
measure for SCRAPE_BENCH_SECONDS (120):
  - CPU per sample: the scraper's CPU seconds over the window (every
    thread, /proc schedstat: benchlib.cpu_seconds) / samples it ingested in
    the window, read from its own counter: Prometheus
    prometheus_tsdb_head_samples_appended_total, VictoriaMetrics
    vm_rows_added_to_storage_total (equal to vm_rows_inserted_total
    {type="promscrape"} when only promscrape writes), kelvin
    kelvin_scrape_samples_appended_total when the server has it, else
    kelvin_tsdb_head_samples_appended_total. Every count includes the
    scraper's own per-target series (up, scrape_duration_seconds, ...).
  - RSS per active series: VmRSS at the end of the window / active series
    at the end: Prometheus prometheus_tsdb_head_series; VictoriaMetrics
    vm_cache_entries{type="storage/hour_metric_ids"} (series seen this
    hour; it fills lazily, so storage/tsid when it is still 0); kelvin
    kelvin_tsdb_head_series. Go heaps swing with GC, so the mean RSS over
    the window's second half is printed next to it.
  - the fleet simulator's own CPU over the same window (% of one core), to
    show it is not the bottleneck, and the scrapes it served.

Goals (issue #4): CPU per sample <= 0.25 x Prometheus; RSS per active
series <= 0.5 x VictoriaMetrics.

BENCH_ONLY: "" or "scrape" runs it (anything else runs nothing here).
Knobs (env): SCRAPE_BENCH_NODES (200), SCRAPE_BENCH_INTERVAL (5, seconds),
SCRAPE_BENCH_SECONDS (120), SCRAPE_BENCH_SCRAPERS (prometheus,vm,kelvin:
which to run, in order). Takes about 3 x (SECONDS + 3 x INTERVAL + start-up).
Loops are bounded in count and time; only 127.0.0.1 is used; every process
started is stopped on the way out, failure included. Exit status: 0 when
every scraper asked for ran (goals are reported, not enforced), 1 otherwise.
"""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from benchlib import (BenchError, cleanup, cpu_seconds, free_port, http_get, log, metric_values, start, start_fleet,
                      status_kib, stop, tail, wait_up)

KELVIN = os.path.abspath(os.environ.get("KELVIN_BIN", "build/kelvin"))
PEERS = os.path.abspath(os.environ.get("KELVIN_PEERS", "build/peers"))
PROMETHEUS = os.path.join(PEERS, "bin", "prometheus")
VM = os.path.join(PEERS, "bin", "victoria-metrics")

NODES = int(os.environ.get("SCRAPE_BENCH_NODES", "200"))
INTERVAL = float(os.environ.get("SCRAPE_BENCH_INTERVAL", "5"))
SECONDS = float(os.environ.get("SCRAPE_BENCH_SECONDS", "120"))
SCRAPERS = [s.strip() for s in os.environ.get("SCRAPE_BENCH_SCRAPERS", "prometheus,vm,kelvin").split(",") if s.strip()]


# ---- the scrapers: command line, and how each reports samples and series ----

def prom_cmd(cfg, data, port):
    return [PROMETHEUS, f"--config.file={cfg}", f"--storage.tsdb.path={data}",
            f"--web.listen-address=127.0.0.1:{port}", "--log.level=error"]


def prom_samples(text):
    v = metric_values(text, "prometheus_tsdb_head_samples_appended_total")
    return (sum(v.values()), "prometheus_tsdb_head_samples_appended_total") if v else (None, "")


def prom_series(text):
    v = metric_values(text, "prometheus_tsdb_head_series")
    return (sum(v.values()), "prometheus_tsdb_head_series") if v else (None, "")


def vm_cmd(cfg, data, port):
    return [VM, f"-promscrape.config={cfg}", f"-storageDataPath={data}", f"-httpListenAddr=127.0.0.1:{port}",
            "-loggerLevel=ERROR"]


def vm_samples(text):
    v = metric_values(text, "vm_rows_added_to_storage_total")
    if v:
        return sum(v.values()), "vm_rows_added_to_storage_total"
    v = {k: x for k, x in metric_values(text, "vm_rows_inserted_total").items() if 'type="promscrape"' in k}
    return (sum(v.values()), 'vm_rows_inserted_total{type="promscrape"}') if v else (None, "")


def vm_series(text):
    cache = metric_values(text, "vm_cache_entries")
    hour = cache.get('{type="storage/hour_metric_ids"}', 0)
    if hour > 0:
        return hour, 'vm_cache_entries{type="storage/hour_metric_ids"}'
    tsid = cache.get('{type="storage/tsid"}')
    return (tsid, 'vm_cache_entries{type="storage/tsid"}') if tsid is not None else (None, "")


def kelvin_cmd(cfg, data, port):
    return [KELVIN, "server", f"--config.file={cfg}", f"--storage.tsdb.path={data}",
            f"--web.listen-address=127.0.0.1:{port}"]


def kelvin_samples(text):
    for name in ("kelvin_scrape_samples_appended_total", "kelvin_tsdb_head_samples_appended_total"):
        v = metric_values(text, name)
        if v:
            return sum(v.values()), name
    return None, ""


def kelvin_series(text):
    v = metric_values(text, "kelvin_tsdb_head_series")
    return (sum(v.values()), "kelvin_tsdb_head_series") if v else (None, "")


SCRAPER_DEFS = {
    "prometheus": ("Prometheus 2.42", PROMETHEUS, prom_cmd, "/-/ready", "/metrics", prom_samples, prom_series),
    "vm": ("VictoriaMetrics 1.79", VM, vm_cmd, "/health", "/metrics", vm_samples, vm_series),
    "kelvin": ("kelvin server", KELVIN, kelvin_cmd, "/-/healthy", "/metrics", kelvin_samples, kelvin_series),
}


def kelvin_has_server():
    try:
        r = subprocess.run([KELVIN, "server", "--help"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return r.returncode == 0 and "storage.tsdb.path" in r.stdout + r.stderr


# ---- the fleet ----------------------------------------------------------------

def write_config(tmp, sd):
    cfg = os.path.join(tmp, "prometheus.yml")
    timeout = min(INTERVAL, 10)
    with open(cfg, "w") as f:
        f.write("global:\n"
                f"  scrape_interval: {int(INTERVAL * 1000)}ms\n"
                f"  scrape_timeout: {int(timeout * 1000)}ms\n"
                "scrape_configs:\n"
                "  - job_name: fleet\n"
                "    file_sd_configs:\n"
                f"      - files: ['{sd}']\n")
    return cfg


# ---- one run --------------------------------------------------------------------

def run_one(key, tmp, cfg, fleet, per_node):
    title, binary, mkcmd, health, mpath, samples_of, series_of = SCRAPER_DEFS[key]
    port = free_port()
    data = tempfile.mkdtemp(prefix=f"{key}-data-", dir=tmp)
    lpath = os.path.join(tmp, f"{key}.log")
    lf = open(lpath, "w")
    try:
        p = start(mkcmd(cfg, data, port), stdout=lf, stderr=lf, cwd=tmp)
    except OSError as e:
        lf.close()
        raise BenchError(f"{title}: cannot start: {e}")
    base = f"http://127.0.0.1:{port}"
    try:
        wait_up(base + health, p, lpath)
        # warm-up: two full rounds of the fleet's samples in
        want = 2 * NODES * per_node
        end = time.time() + 6 * INTERVAL + 90
        got = 0
        while time.time() < end:
            if p.poll() is not None:
                raise BenchError(f"{title} exited with {p.returncode}: {tail(lpath)}")
            got, sname = samples_of(http_get(base + mpath))
            if got is not None and got >= want:
                break
            time.sleep(1)
        else:
            raise BenchError(f"{title}: only {got} of {want} samples after the warm-up bound: {tail(lpath)}")
        m0 = http_get(base + mpath)
        s0, sname = samples_of(m0)
        c0, f0, t0 = cpu_seconds(p.pid), cpu_seconds(fleet.pid), time.time()
        rss = []
        steps = max(1, int(SECONDS / INTERVAL))
        for k in range(steps):  # bounded: SECONDS / INTERVAL samples of RSS
            time.sleep(max(0.0, t0 + (k + 1) * SECONDS / steps - time.time()))
            if p.poll() is not None:
                raise BenchError(f"{title} exited with {p.returncode} during the measurement: {tail(lpath)}")
            rss.append(status_kib(p.pid, "VmRSS"))
        c1, f1, t1 = cpu_seconds(p.pid), cpu_seconds(fleet.pid), time.time()
        m1 = http_get(base + mpath)
        s1, _ = samples_of(m1)
        series, series_name = series_of(m1)
        if s1 is None or series is None:
            raise BenchError(f"{title}: its samples or series counter is missing from {mpath}")
        rss_end = status_kib(p.pid, "VmRSS") * 1024
        half = rss[len(rss) // 2:]
        res = {
            "title": title,
            "wall_s": t1 - t0,
            "cpu_s": c1 - c0,
            "samples": s1 - s0,
            "samples_name": sname,
            "series": series,
            "series_name": series_name,
            "rss_end": rss_end,
            "rss_mean2": sum(half) / len(half) * 1024,
            "fleet_cpu_s": f1 - f0,
        }
        if res["samples"] <= 0:
            raise BenchError(f"{title}: ingested no samples during the measurement")
        res["cpu_per_sample"] = res["cpu_s"] / res["samples"]
        res["rss_per_series"] = res["rss_end"] / series if series else float("nan")
        res["rss2_per_series"] = res["rss_mean2"] / series if series else float("nan")
        res["expected_rate"] = NODES * per_node / INTERVAL
        return res
    finally:
        stop(p)
        lf.close()
        shutil.rmtree(data, ignore_errors=True)


def fmt_ns(s):
    return f"{s * 1e9:,.0f} ns"


def report(res, per_node):
    log("")
    log(f"scrape benchmark: {NODES} nodes x {per_node} series, every {INTERVAL:g} s, "
        f"{SECONDS:g} s measured per scraper ({os.cpu_count()} CPUs)")
    log("| scraper | samples/s | CPU % of a core | CPU per sample | active series | RSS end | RSS per series "
        "(end) | RSS per series (2nd-half mean) | fleet CPU % |")
    log("|---|---|---|---|---|---|---|---|---|")
    for key in SCRAPERS:
        r = res.get(key)
        if not r:
            log(f"| {SCRAPER_DEFS[key][0]} | not run | | | | | | | |")
            continue
        short = " (short of the fleet's rate: failed scrapes?)" if r["samples"] / r["wall_s"] < 0.95 * r["expected_rate"] else ""
        log(f"| {r['title']} | {r['samples'] / r['wall_s']:,.0f}{short} | {100 * r['cpu_s'] / r['wall_s']:.1f} | "
            f"{fmt_ns(r['cpu_per_sample'])} | {r['series']:,.0f} | {r['rss_end'] / 2**20:.1f} MiB | "
            f"{r['rss_per_series']:,.0f} B | {r['rss2_per_series']:,.0f} B | "
            f"{100 * r['fleet_cpu_s'] / r['wall_s']:.1f} |")
    for key in SCRAPERS:
        r = res.get(key)
        if r:
            log(f"  {r['title']}: samples from {r['samples_name']}, series from {r['series_name']}; "
                f"expected {r['expected_rate']:,.0f} fleet samples/s")
    k, p, v = res.get("kelvin"), res.get("prometheus"), res.get("vm")
    if k and p:
        r = k["cpu_per_sample"] / p["cpu_per_sample"]
        log(f"  CPU per sample kelvin/Prometheus {r:.3f} (goal <= 0.25: {'met' if r <= 0.25 else 'NOT met'})")
    if k and v:
        log(f"  CPU per sample kelvin/VM {k['cpu_per_sample'] / v['cpu_per_sample']:.3f}")
    if k and v:
        r = k["rss_per_series"] / v["rss_per_series"]
        r2 = k["rss2_per_series"] / v["rss2_per_series"]
        log(f"  RSS per active series kelvin/VM {r:.3f} at the end, {r2:.3f} on 2nd-half means "
            f"(goal <= 0.5: {'met' if r <= 0.5 else 'NOT met'})")
    if k and p:
        log(f"  RSS per active series kelvin/Prometheus {k['rss_per_series'] / p['rss_per_series']:.3f}")
    if p and v:
        log(f"  reference: VM/Prometheus CPU per sample {v['cpu_per_sample'] / p['cpu_per_sample']:.3f}, "
            f"RSS per series {v['rss_per_series'] / p['rss_per_series']:.3f}")


def main():
    if os.environ.get("BENCH_ONLY", "") not in ("", "scrape"):
        return 0
    unknown = [s for s in SCRAPERS if s not in SCRAPER_DEFS]
    if unknown:
        raise SystemExit(f"scrape bench: unknown SCRAPE_BENCH_SCRAPERS entries {unknown} (prometheus, vm, kelvin)")
    for key in SCRAPERS:
        if key != "kelvin" and not os.access(SCRAPER_DEFS[key][1], os.X_OK):
            raise SystemExit(f"scrape bench: {SCRAPER_DEFS[key][1]} missing (run scripts/peers)")
    if not os.access(KELVIN, os.X_OK):
        raise SystemExit(f"scrape bench: {KELVIN} missing (set KELVIN_BIN)")
    log(f"kelvin scrape benchmark ({time.strftime('%Y-%m-%d %H:%M:%S')}, {os.cpu_count()} CPUs)")
    tmp = tempfile.mkdtemp(prefix="kelvin-scrape-bench-")
    old = signal.signal(signal.SIGTERM, lambda *a: sys.exit(143))
    res, rc, per_node = {}, 0, 0
    try:
        fleet, base, sd, per_node = start_fleet(KELVIN, tmp, NODES, INTERVAL)
        cfg = write_config(tmp, sd)
        log(f"  fleet: {NODES} nodes x {per_node} series at {base}, file_sd {sd}")
        for key in SCRAPERS:
            if key == "kelvin" and not kelvin_has_server():
                log(f"  kelvin server: not run ({KELVIN} has no `server` command yet)")
                rc = 1
                continue
            log(f"  {SCRAPER_DEFS[key][0]}: warm-up, then {SECONDS:g} s ...")
            try:
                res[key] = run_one(key, tmp, cfg, fleet, per_node)
            except BenchError as e:
                print(f"scrape bench: {e}", file=sys.stderr, flush=True)
                rc = 1
            if fleet.poll() is not None:
                raise BenchError(f"the fleet exited with {fleet.returncode}: {tail(os.path.join(tmp, 'fleet.log'))}")
    except BenchError as e:
        print(f"scrape bench: {e}", file=sys.stderr, flush=True)
        rc = 1
    finally:
        cleanup()
        signal.signal(signal.SIGTERM, old)
        shutil.rmtree(tmp, ignore_errors=True)
    if res:
        report(res, per_node)
    return rc


if __name__ == "__main__":
    sys.exit(main())
