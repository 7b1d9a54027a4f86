#!/usr/bin/python3
"""`kelvin sim history`: a scenario's simulated telemetry written into blocks.

- --help documents the labels, names and timelines; bad flags, an unknown
  scenario and a non-empty --out fail without writing anything;
- each scenario (6 h, 2 nodes, the fault on GPU 3 of node-0) writes blocks
  and DIR/scenario.json; the failure times are checked against the
  documented defaults (onset D/4, failure 3/4 of the rest later) computed
  here, and healthy has no failure;
- a kelvin server opened on each DIR answers PromQL with the agent's names
  and labels (DCGM_FI_DEV_GPU_TEMP, DCGM_FI_DEV_MEMORY_TEMP,
  DCGM_FI_DEV_FB_USED, node_memory_MemAvailable_bytes, up, the scrape's
  own series, job="kelvin-agent", instance="node-<i>:9400"), counters
  never reset, and each fault shows at its `at` on the right GPU only:
  HBM at its limit first at `at` after a rise visible more than 10 min
  before; memory exhausted then the process OOM-killed; XIDs from `at` on;
  the uncorrectable ECC error at `at` after rising correctable ones; the
  lost GPU's series ending at `at` (stale) while the rest go on;
- the series are exactly those a kelvin server stores when it scrapes
  `kelvin sim fleet` for the same node (label sets compared, less the
  target labels);
- a long healthy history (17 d x 8 nodes; 17 d x 1 node in a sanitizer
  build, where the same work is ~5x slower) is written with bounded memory,
  in blocks that tile the range, with no abnormal value: its time is
  printed, not asserted.
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

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import kelvintest as kt  # noqa: E402

START = 1700000000  # a multiple of 30 s
D = 6 * 3600
ONSET = D // 4
FAIL = (D - ONSET) * 3 // 4
IV = 30
H100_USABLE_MIB = 81559 - 553
H100_HBM_MAX = 95
KINDS = {"cooling-failure": "hbm-temp-limit", "memory-leak": "gpu-memory-exhausted", "xid-storm": "xid-storm",
         "ecc-degradation": "ecc-uncorrectable", "fell-off-bus": "fell-off-bus"}


def history(out, *args, timeout=240):
    return kt.run_capture([kt.KELVIN, "sim", "history", f"--out={out}", *args], timeout=timeout)


def start_server(work, name, data_dir, extra_cfg=""):
    cfg = os.path.join(work, name + ".yml")
    port = kt.free_port()
    with open(cfg, "w") as f:
        f.write("global:\n  scrape_interval: 1s\nscrape_configs:" + (extra_cfg if extra_cfg else " []\n"))
    p = kt.start([kt.KELVIN, "server", f"--storage.tsdb.path={data_dir}", f"--config.file={cfg}",
                  "--storage.tsdb.retention.time=3650d", f"--web.listen-address=127.0.0.1:{port}"],
                 log=os.path.join(work, name + ".log"))
    url = f"http://127.0.0.1:{port}"
    kt.wait_http(url + "/-/ready", proc=p)
    return p, url


def api(url, path, **params):
    status, _, body = kt.http(url + path + "?" + urllib.parse.urlencode(params, doseq=True), timeout=60)
    if status != 200:
        raise AssertionError(f"{path} {params}: HTTP {status}: {body[:300]!r}")
    doc = json.loads(body)
    if doc.get("status") != "success":
        raise AssertionError(f"{path} {params}: {doc}")
    return doc["data"]


def q(url, expr, t):
    """Instant query: [(labels, value)]."""
    data = api(url, "/api/v1/query", query=expr, time=f"{t:.3f}")
    if data["resultType"] == "scalar":
        return [({}, float(data["result"][1]))]
    return [(r["metric"], float(r["value"][1])) for r in data["result"]]


def q1(url, expr, t):
    r = q(url, expr, t)
    if len(r) != 1:
        raise AssertionError(f"{expr} at {t}: want one result, got {r}")
    return r[0][1]


def qrange(url, expr, t0, t1, step):
    data = api(url, "/api/v1/query_range", query=expr, start=f"{t0:.3f}", end=f"{t1:.3f}", step=str(step))
    return [(r["metric"], [(float(t), float(v)) for t, v in r["values"]]) for r in data["result"]]


def gpu_sel(node, gpu, extra=""):
    return f'instance="node-{node}:9400",gpu="{gpu}"' + ("," + extra if extra else "")


# ---- checks ---------------------------------------------------------------------------

def check_help_and_errors(f, work):
    rc, out, err = kt.run_capture([kt.KELVIN, "sim", "history", "--help"])
    f.check(rc == 0, f"--help exits {rc}")
    for want in ['job="kelvin-agent"', 'instance="node-<i>:9400"', "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_MEMORY_TEMP",
                 "DCGM_FI_DEV_FB_USED", "node_memory_MemAvailable_bytes", "scrape_duration_seconds", "stale marker",
                 "scenario.json", "--storage.tsdb.retention.time", "TIMELINES", *KINDS.values(),
                 *KINDS.keys(), "--fault-gpu", "--leak-per-day", "--onset", "--fail-after"]:
        f.check(want in out, f"--help lacks {want!r}")
    rc, out, err = kt.run_capture([kt.KELVIN, "sim", "--help"])
    f.check(rc == 0 and "history" in out, f"`kelvin sim --help` does not list history: {rc} {out!r}")
    d = os.path.join(work, "bad")
    for args, why in [(["--scenario=meltdown"], "unknown scenario"), (["--duration=1x"], "bad duration"),
                      (["--nodes=0"], "no nodes"), (["--scenario=memory-leak", "--fault-gpu=8"], "fault GPU 8 of 8"),
                      (["--scenario=xid-storm", "--fault-nodes=3", "--nodes=2"], "more fault nodes than nodes"),
                      (["--onset=7h", "--duration=6h"], "onset after the end"), (["--no-such-flag"], "unknown flag")]:
        rc, out, err = history(d, *args)
        f.check(rc == 2 and err.strip(), f"{why}: exit {rc}, stderr {err!r}")
        f.check(not os.path.exists(os.path.join(d, "scenario.json")), f"{why}: wrote scenario.json")
    rc, out, err = kt.run_capture([kt.KELVIN, "sim", "history", "--duration=1h"])
    f.check(rc == 2 and "--out" in err, f"missing --out: exit {rc}, {err!r}")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "keep"), "w") as fh:
        fh.write("x")
    rc, out, err = history(d, "--duration=1h")
    f.check(rc != 0 and "not empty" in err, f"non-empty --out: exit {rc}, {err!r}")
    f.check(sorted(os.listdir(d)) == ["keep"], f"non-empty --out was written to: {os.listdir(d)}")


def generate(f, work, scenario, seed):
    d = os.path.join(work, scenario)
    t = time.time()
    rc, out, err = history(d, f"--scenario={scenario}", "--duration=6h", "--nodes=2", f"--start={START}",
                           "--fault-gpu=3", f"--seed={seed}")
    took = time.time() - t
    if not f.check(rc == 0, f"{scenario}: exit {rc}: {err}"):
        return None, None
    print(f"  {scenario}: {took:.1f} s: {out.splitlines()[0] if out else ''}")
    with open(os.path.join(d, "scenario.json")) as fh:
        truth = json.load(fh)
    f.check(truth["scenario"] == scenario, f"{scenario}: scenario.json names {truth['scenario']!r}")
    f.check(truth["start"] == START and truth["end"] == START + D, f"{scenario}: range {truth}")
    fails = truth["failures"]
    if scenario == "healthy":
        f.check(fails == [], f"healthy has failures: {fails}")
        return d, truth
    if not f.check(len(fails) == 1, f"{scenario}: want one failure, got {fails}"):
        return d, truth
    x = fails[0]
    f.check(x["node"] == "node-0" and x["gpu"] == "3" and x["kind"] == KINDS[scenario],
            f"{scenario}: failure {x}")
    f.check(truth["onset"] == START + ONSET, f"{scenario}: onset {truth['onset']} != {START + ONSET}")
    at = x["at"]
    if scenario in ("memory-leak", "ecc-degradation", "fell-off-bus"):
        f.check(at == START + ONSET + FAIL, f"{scenario}: at {at} != onset + 3/4 of the rest {START + ONSET + FAIL}")
    elif scenario == "xid-storm":
        f.check(START + ONSET < at < START + ONSET + 10, f"xid-storm: first XID at {at}, not in the first burst")
    else:  # after the onset, within the ramp (min(6h, F) = F here)
        f.check(START + ONSET + 600 < at < START + ONSET + FAIL, f"cooling-failure: at {at} outside the ramp")
    return d, truth


def check_common(f, url, scenario, truth):
    end = START + D - 1
    # the agent's names and the scrape's labels, on both nodes
    for name, per_node in [("DCGM_FI_DEV_GPU_TEMP", 8), ("DCGM_FI_DEV_MEMORY_TEMP", 8), ("DCGM_FI_DEV_FB_USED", 8),
                           ("DCGM_FI_DEV_FB_FREE", 8), ("DCGM_FI_DEV_POWER_USAGE", 8),
                           ("node_memory_MemAvailable_bytes", 1), ("node_memory_MemTotal_bytes", 1), ("up", 1),
                           ("scrape_duration_seconds", 1), ("scrape_samples_scraped", 1),
                           ("scrape_samples_post_metric_relabeling", 1), ("scrape_series_added", 1),
                           ("kelvin_gpu_nvml_up", 1)]:
        r = q(url, name, START + 3600)
        f.check(len(r) == 2 * per_node, f"{scenario}: {name}: {len(r)} series, want {2 * per_node}")
        for m, _ in r:
            if not (m.get("job") == "kelvin-agent" and re.fullmatch(r"node-[01]:9400", m.get("instance", ""))):
                f.check(False, f"{scenario}: {name} lacks the scrape's labels: {m}")
                break
    r = q(url, 'DCGM_FI_DEV_GPU_TEMP{instance="node-1:9400",gpu="5"}', START + 3600)
    if f.check(len(r) == 1, f"{scenario}: node-1 GPU 5: {r}"):
        m = r[0][0]
        for k, v in [("Hostname", "node-1"), ("device", "nvidia5"), ("simulated", "true"),
                     ("modelName", "NVIDIA H100 80GB HBM3"), ("DCGM_FI_DRIVER_VERSION", "550.54.15")]:
            f.check(m.get(k) == v, f"{scenario}: label {k}={m.get(k)!r}, want {v!r}")
        f.check(m.get("UUID", "").startswith("GPU-") and m.get("pci_bus_id"), f"{scenario}: identity labels {m}")
    # up is 1 at every scrape; the scrape's counts add up
    f.check(q1(url, f"min(min_over_time(up[{D}s]))", end) == 1, f"{scenario}: up was not always 1")
    f.check(q1(url, f"count(count_over_time(up[{D}s]) >= {D // IV - 1})", end) == 2,
            f"{scenario}: fewer than one up sample per {IV} s")
    n = q1(url, 'scrape_samples_scraped{instance="node-1:9400"}', START + 7200)
    c = q1(url, 'count({instance="node-1:9400",__name__!~"up|scrape_.*"})', START + 7200)
    f.check(n == c, f"{scenario}: scrape_samples_scraped {n} but {c} series")
    f.check(q1(url, f'sum(scrape_series_added{{instance="node-1:9400"}})', START + 7200) == 0,
            f"{scenario}: series added in a steady scrape")
    # counters stay counters
    for name in ["DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "node_cpu_seconds_total", "kelvin_gpu_nvlink_bytes_total",
                 "kelvin_gpu_violation_seconds_total", "node_network_receive_bytes_total"]:
        r = q(url, f"sum(resets({name}[{D}s]))", end)
        f.check(r and r[0][1] == 0, f"{scenario}: {name} reset: {r}")
    # the healthy node stays healthy
    f.check(q1(url, f'max(max_over_time(DCGM_FI_DEV_MEMORY_TEMP{{instance="node-1:9400"}}[{D}s]))', end) < 85,
            f"{scenario}: node-1's HBM ran hot")
    f.check(q(url, 'kelvin_gpu_xid_errors_total{instance="node-1:9400"}', end) == [], f"{scenario}: XIDs on node-1")


def check_fault(f, url, scenario, truth):
    end = START + D - 1
    if scenario == "healthy":
        f.check(q1(url, f"max(max_over_time(DCGM_FI_DEV_MEMORY_TEMP[{D}s]))", end) < 85, "healthy: HBM ran hot")
        f.check(q1(url, f"max(max_over_time(DCGM_FI_DEV_GPU_TEMP[{D}s]))", end) < 80, "healthy: a die ran hot")
        f.check(q(url, "kelvin_gpu_xid_errors_total", end) == [], "healthy: XIDs")
        f.check(q1(url, f"max(max_over_time(kelvin_gpu_lost[{D}s]))", end) == 0, "healthy: a GPU was lost")
        f.check(q1(url, f"sum(increase(kelvin_gpu_ecc_volatile_errors_total[{D}s]))", end) == 0, "healthy: ECC errors")
        f.check(q1(url, f"min(min_over_time(DCGM_FI_DEV_FB_FREE[{D}s]))", end) > 5000, "healthy: memory ran out")
        return
    at = truth["failures"][0]["at"]
    g3, g2 = gpu_sel(0, 3), gpu_sel(0, 2)
    if scenario == "cooling-failure":
        # `at` is the first scrape at which the HBM reads its limit
        f.check(q1(url, f"DCGM_FI_DEV_MEMORY_TEMP{{{g3}}}", at) >= H100_HBM_MAX, "cooling: HBM not at its limit at `at`")
        before = q1(url, f"max_over_time(DCGM_FI_DEV_MEMORY_TEMP{{{g3}}}[{int(at - START) + 1}s])", at - 0.001)
        f.check(before < H100_HBM_MAX, f"cooling: HBM reached {before} before `at`")
        f.check(q1(url, f"DCGM_FI_DEV_MEMORY_TEMP{{{g3}}}", START + ONSET - 60) < 80, "cooling: hot before the onset")
        # the rise: HBM passed 85 C more than 10 minutes before `at`, and
        # stayed there (but for the hourly checkpoint's dip)
        r = qrange(url, f"DCGM_FI_DEV_MEMORY_TEMP{{{g3}}}", START + ONSET, at, IV)
        first = next((t for t, v in r[0][1] if v > 85), None) if r else None
        f.check(first is not None and at - first >= 600, f"cooling: HBM passed 85 C at {first}, `at` {at}")
        hot = q1(url, f"quantile_over_time(0.5, DCGM_FI_DEV_MEMORY_TEMP{{{g3}}}[10m])", at - 0.001)
        f.check(hot > 85, f"cooling: HBM's median over the 10 min before `at` is only {hot} C")
        f.check(q1(url, f'max_over_time(kelvin_gpu_clock_event_active{{{g3},reason="sw_thermal"}}[{D}s])', end) == 1,
                "cooling: never thermally throttled")
        f.check(q1(url, f"max(max_over_time(DCGM_FI_DEV_MEMORY_TEMP{{instance=\"node-0:9400\",gpu!=\"3\"}}[{D}s]))",
                   end) < 90, "cooling: another GPU overheated")
    elif scenario == "memory-leak":
        total = q1(url, f"DCGM_FI_DEV_FB_FREE{{{g3}}} + DCGM_FI_DEV_FB_USED{{{g3}}}", START + ONSET - 60)
        used0 = q1(url, f"DCGM_FI_DEV_FB_USED{{{g3}}}", START + ONSET + 30)
        f.check(abs(used0 - 0.55 * H100_USABLE_MIB) < 300, f"leak: {used0} MiB used at the onset, want 55%")
        free_before = q1(url, f"DCGM_FI_DEV_FB_FREE{{{g3}}}", at - 0.001)
        rate = 0.45 * H100_USABLE_MIB / FAIL  # MiB per second
        f.check(free_before <= rate * IV + 600, f"leak: {free_before} MiB still free just before `at`")
        d = q1(url, f"deriv(DCGM_FI_DEV_FB_USED{{{g3}}}[1h])", at - 1800)
        f.check(abs(d - rate) < 0.02 * rate, f"leak: FB_USED grows {d} MiB/s, want {rate}")
        f.check(q1(url, f"min_over_time(DCGM_FI_DEV_FB_USED{{{g3}}}[61s])", at + 61) == 0,
                "leak: the process was not OOM-killed at `at`")
        used_end = q1(url, f"DCGM_FI_DEV_FB_USED{{{g3}}}", end)
        f.check(used0 - 300 < used_end < used0 + rate * (end - at), f"leak: {used_end} MiB at the end: no restart")
        f.check(q1(url, f"max_over_time(DCGM_FI_DEV_FB_USED{{{g2}}}[{D}s])", end) < 0.9 * total,
                "leak: a neighbour GPU leaked")
    elif scenario == "xid-storm":
        f.check(q(url, f"kelvin_gpu_xid_errors_total{{{g3}}}", at - 0.001) == [], "xid: XIDs before `at`")
        f.check(q1(url, f"DCGM_FI_DEV_XID_ERRORS{{{g3}}}", at - 0.001) == 0, "xid: last XID set before `at`")
        n = q1(url, f"sum(kelvin_gpu_xid_errors_total{{{g3}}})", end)
        bursts = (START + D - at) / 240
        f.check(5 * (bursts - 1) <= n <= 20 * (bursts + 1), f"xid: {n} XIDs in {bursts:.0f} bursts")
        f.check(q1(url, f"DCGM_FI_DEV_XID_ERRORS{{{g3}}}", at + IV) > 0, "xid: DCGM_FI_DEV_XID_ERRORS still 0")
        f.check(q(url, f"kelvin_gpu_xid_errors_total{{{g2}}}", end) == [], "xid: XIDs on another GPU")
    elif scenario == "ecc-degradation":
        unc = f'kelvin_gpu_ecc_volatile_errors_total{{{g3},type="uncorrected"}}'
        cor = f'kelvin_gpu_ecc_volatile_errors_total{{{g3},type="corrected"}}'
        f.check(q1(url, unc, at - 0.001) == 0, "ecc: uncorrectable before `at`")
        f.check(q1(url, f"max_over_time({unc}[{IV + 1}s])", at + IV + 1) == 1, "ecc: no uncorrectable at `at`")
        c = [q1(url, cor, START + ONSET + k * FAIL / 4) for k in range(5)]
        f.check(all(a < b for a, b in zip(c[1:], c[2:])), f"ecc: corrected errors do not rise: {c}")
        r1, r2 = c[2] - c[1], c[4] - c[3]
        f.check(r2 > 3 * r1, f"ecc: the rate does not grow ({r1} then {r2} per quarter)")
        f.check(q1(url, f"DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS{{{g3}}}", end) == 1, "ecc: no remapped row")
        f.check(q1(url, f'kelvin_gpu_xid_errors_total{{{g3},xid="48"}}', end) == 1, "ecc: no XID 48")
        f.check(q1(url, f'sum(increase(kelvin_gpu_ecc_volatile_errors_total{{{g2}}}[{D}s]))', end) == 0,
                "ecc: errors on another GPU")
    elif scenario == "fell-off-bus":
        last = q1(url, f"timestamp(DCGM_FI_DEV_GPU_TEMP{{{g3}}})", at)
        f.check(at - IV < last < at, f"bus: last GPU 3 sample at {last}, `at` {at}")
        f.check(q(url, f"DCGM_FI_DEV_GPU_TEMP{{{g3}}}", at + IV + 0.001) == [], "bus: GPU 3 still reported (no stale)")
        f.check(q(url, f"DCGM_FI_DEV_GPU_TEMP{{{g3}}}", end) == [], "bus: GPU 3 back at the end")
        f.check(q1(url, f"kelvin_gpu_lost{{{g3}}}", end) == 1 and q1(url, f"kelvin_gpu_lost{{{g3}}}", at - 1) == 0,
                "bus: kelvin_gpu_lost does not go 0 -> 1")
        f.check(q1(url, f'kelvin_gpu_xid_errors_total{{{g3},xid="79"}}', end) == 1, "bus: no XID 79")
        f.check(len(q(url, 'DCGM_FI_DEV_GPU_TEMP{instance="node-0:9400"}', end)) == 7, "bus: other GPUs stopped")
        f.check(q1(url, 'up{instance="node-0:9400"}', end) == 1, "bus: the node went down")
        rp = q1(url, f"increase(kelvin_gpu_pcie_replays_total{{{g3}}}[5m])", at - 0.001)
        f.check(rp >= 100, f"bus: only {rp} PCIe replays in the 5 min before the loss")


def check_same_as_fleet(f, work, hist_url):
    """The label sets of one node: history vs a server scraping `kelvin sim fleet`."""
    port = kt.free_port()
    fleet = kt.start([kt.KELVIN, "sim", "fleet", "--nodes=1", f"--listen=127.0.0.1:{port}", "--seed=1"],
                     log=os.path.join(work, "fleet.log"))
    kt.wait_http(f"http://127.0.0.1:{port}/-/healthy", proc=fleet)
    d = os.path.join(work, "scraped")
    cfg = (f"\n  - job_name: kelvin-agent\n    metrics_path: /node/0/metrics\n    static_configs:\n"
           f"      - targets: ['127.0.0.1:{port}']\n")
    srv, url = start_server(work, "scraper", d, cfg)
    deadline = time.time() + 30
    got = []
    while time.time() < deadline:
        got = api(url, "/api/v1/series", **{"match[]": '{job="kelvin-agent"}'})
        if len(got) > 900 and any(s["__name__"] == "scrape_series_added" for s in got):
            break
        time.sleep(0.5)
    kt.stop(srv)
    kt.stop(fleet)

    def norm(series, instance):
        out = set()
        for s in series:
            if s.get("instance") != instance:
                continue
            out.add(tuple(sorted((k, v) for k, v in s.items() if k not in ("instance", "job"))))
        return out

    scraped = norm(got, f"127.0.0.1:{port}")
    mine = norm(api(hist_url, "/api/v1/series", **{"match[]": '{job="kelvin-agent"}', "start": str(START),
                                                  "end": str(START + D)}), "node-0:9400")
    f.check(len(scraped) > 900, f"fleet scrape: only {len(scraped)} series")
    f.check(scraped == mine, "history and a scraped fleet differ: only scraped: "
            f"{sorted(scraped - mine)[:5]}; only history: {sorted(mine - scraped)[:5]}")


def sanitized():
    cache = os.path.join(os.environ.get("KELVIN_BUILD_DIR", ""), "CMakeCache.txt")
    try:
        with open(cache) as fh:
            text = fh.read()
    except OSError:
        return False
    return bool(re.search(r"^KELVIN_(SANITIZE|TSAN):BOOL=ON", text, re.M))


def check_long(f, work):
    days, nodes = 17, (1 if sanitized() else 8)
    d = os.path.join(work, "long")
    start = 1690000020
    cmd = [kt.KELVIN, "sim", "history", "--scenario=healthy", f"--duration={days}d", f"--nodes={nodes}",
           f"--out={d}", f"--start={start}"]
    t0 = time.time()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    status, ru = None, None
    while time.time() < t0 + 260:  # bounded; the time is printed, not judged
        pid, st, usage = os.wait4(p.pid, os.WNOHANG)
        if pid:
            status, ru = st, usage
            break
        time.sleep(0.2)
    if status is None:
        p.kill()
        p.wait()
        f.check(False, f"{days}d x {nodes} nodes: still running after 260 s")
        return
    took = time.time() - t0
    out, err = p.stdout.read().decode(), p.stderr.read().decode()
    p.stdout.close()
    p.stderr.close()
    if not f.check(os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, f"long history failed: {err}"):
        return
    rss_mib = ru.ru_maxrss / 1024
    print(f"  healthy {days}d x {nodes} nodes x 8 GPUs: {took:.1f} s wall, {ru.ru_utime + ru.ru_stime:.1f} s CPU, "
          f"max RSS {rss_mib:.0f} MiB{' (sanitizer build: 1 node)' if nodes == 1 else ''}")
    print("   ", out.splitlines()[0])
    f.check(rss_mib < 3072, f"long history used {rss_mib:.0f} MiB")
    with open(os.path.join(d, "scenario.json")) as fh:
        truth = json.load(fh)
    f.check(truth["failures"] == [] and truth["end"] - truth["start"] == days * 86400, f"long: {truth}")
    m = re.search(r"(\d+) samples", out)
    # blocks tile the range and hold every sample
    rc, lst, err = kt.run_capture([kt.KELVIN, "tsdb", "list", d])
    rows = [line.split() for line in lst.splitlines()[1:] if line.strip()]
    spans = sorted((int(r[1]), int(r[2]), int(r[4])) for r in rows)
    f.check(rc == 0 and len(spans) >= 8, f"long: {len(spans)} blocks: {lst[:300]}")
    f.check(spans and spans[0][0] == start * 1000 and spans[-1][1] == (start + days * 86400) * 1000,
            f"long: blocks span {spans[:1]} .. {spans[-1:]}")
    f.check(all(a[1] == b[0] for a, b in zip(spans, spans[1:])), "long: blocks overlap or leave gaps")
    f.check(m and sum(s[2] for s in spans) == int(m.group(1)), "long: samples in blocks != samples written")
    per_scrape = sum(s[2] for s in spans) / (days * 86400 / IV) / nodes
    f.check(900 < per_scrape < 1200, f"long: {per_scrape:.0f} samples per node and scrape")
    # nothing abnormal in 17 days: what a sane alert pack must not page on
    srv, url = start_server(work, "long", d)
    end = start + days * 86400 - 1
    rng = f"{days}d"
    for expr, ok, what in [
            (f"min(min_over_time(up[{rng}]))", lambda v: v == 1, "up"),
            (f"count(up)", lambda v: v == nodes, "targets"),
            (f"max(max_over_time(DCGM_FI_DEV_GPU_TEMP[{rng}]))", lambda v: 50 < v < 80, "die temperature"),
            (f"max(max_over_time(DCGM_FI_DEV_MEMORY_TEMP[{rng}]))", lambda v: 55 < v < 85, "HBM temperature"),
            (f"max(max_over_time(kelvin_gpu_lost[{rng}]))", lambda v: v == 0, "lost GPUs"),
            (f"sum(increase(kelvin_gpu_ecc_volatile_errors_total[{rng}]))", lambda v: v == 0, "ECC errors"),
            (f"min(min_over_time(DCGM_FI_DEV_FB_FREE[{rng}]))", lambda v: v > 5000, "free GPU memory (MiB)"),
            (f"max(max_over_time(kelvin_gpu_clock_event_active{{reason=~\"hw_.*|sw_thermal\"}}[{rng}]))",
             lambda v: v == 0, "thermal / hardware throttling"),
            (f"sum(resets(DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION[{rng}]))", lambda v: v == 0, "energy counter resets"),
            (f"min(min_over_time(node_memory_MemAvailable_bytes[{rng}]))", lambda v: v > 100 * 2**30,
             "available host memory")]:
        r = q(url, expr, end)
        f.check(len(r) == 1 and ok(r[0][1]), f"long healthy: {what}: {expr} = {r}")
    f.check(q(url, "kelvin_gpu_xid_errors_total", end) == [], "long healthy: XIDs")
    kt.stop(srv)


def main():
    f = kt.Failures()
    work = tempfile.mkdtemp(prefix="kelvin-sim-history-")
    try:
        check_help_and_errors(f, work)
        check_long(f, work)
        for i, scenario in enumerate(["healthy", *KINDS]):
            d, truth = generate(f, work, scenario, seed=1 if scenario == "healthy" else 10 + i)
            if not d:
                continue
            srv, url = start_server(work, scenario, d)
            check_common(f, url, scenario, truth)
            check_fault(f, url, scenario, truth)
            if scenario == "healthy":
                check_same_as_fleet(f, work, url)
            kt.stop(srv)
    finally:
        kt.stop_all()
        shutil.rmtree(work, ignore_errors=True)
        f.finish("sim_history")


if __name__ == "__main__":
    main()
