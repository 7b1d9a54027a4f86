#!/usr/bin/python3
"""bench/rules_bench.py -- the cost of evaluating the GPU alert pack
(rules/gpu.rules.yml) over a simulated fleet: CPU seconds per evaluation
round, kelvin server next to Prometheus 2.42 on the same data in the same
run (issue #6's benchmark; goal: kelvin <= 0.5 x Prometheus).

Data: `kelvin sim history --scenario healthy` writes RULES_BENCH_NODES (1000)
nodes x 8 GPUs, scraped every 30 s, for RULES_BENCH_MINUTES (60) ending
RULES_BENCH_AHEAD (60) minutes after now (the servers evaluate at wall-clock
time, so the data must reach past the measurement). `kelvin tsdb
dump-openmetrics` writes the series of the metrics the pack reads (every
name the pack's expressions mention: ~190 series a node) as OpenMetrics, and
that one file is backfilled into both stores (promtool tsdb
create-blocks-from openmetrics, kelvin tsdb create-blocks-from openmetrics).

Measurement, one server at a time (the other stopped): the server starts on
its store with no scrape jobs and the pack as its only rule file, every
group's interval set to RULES_BENCH_EVAL (30 s). After every group has run
twice (warm-up), the process's CPU time (all threads, /proc schedstat) is
read, RULES_BENCH_ROUNDS (6) rounds are waited for (rounds run: the
server's prometheus_rule_group_iterations_total minus
..._iterations_missed_total, the slowest group's), and the CPU time read
again: CPU seconds per round = the difference / rounds. The same server's
idle CPU (RULES_BENCH_IDLE seconds without rules, before) is reported and
subtracted for the net figure. Also reported: the sum of the groups' last
evaluation durations (wall time), the samples a round writes
(prometheus_rule_group_last_evaluation_samples), rule evaluation failures
(must be 0), and, as agreement, the number of series each recording rule
and ALERTS produce at the end, which must be equal on both servers.

Exit status 0 when both servers ran the pack without failures and agree,
1 otherwise (the goal is reported, not enforced). Bounded: every wait has a
deadline (RULES_BENCH_DEADLINE, 3600 s in all); only 127.0.0.1 is used;
every process started is stopped on the way out.
BENCH_ONLY: "" or "rules" runs it. RULES_BENCH_KELVIN_FLAGS adds flags to kelvin
server (e.g. --query.threads=1); RULES_BENCH_DIR is the parent of the
temporary directory (it needs ~11 GB at 1,000 nodes while loading).
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "lib"))
import promql_data as pd  # noqa: E402
from benchlib import BenchError, cleanup, cpu_seconds, free_port, http_get, log, metric_values, start, stop, wait_up  # noqa: E402,E501

KELVIN = os.path.abspath(os.environ.get("KELVIN_BIN", "build/kelvin"))
PEERS = os.path.abspath(os.environ.get("KELVIN_PEERS", "build/peers"))
PROMETHEUS = os.path.join(PEERS, "bin", "prometheus")
PROMTOOL = os.path.join(PEERS, "bin", "promtool")
PACK = os.path.join(HERE, "..", "rules", "gpu.rules.yml")

NODES = int(os.environ.get("RULES_BENCH_NODES", "1000"))
MINUTES = int(os.environ.get("RULES_BENCH_MINUTES", "60"))
AHEAD = int(os.environ.get("RULES_BENCH_AHEAD", "60"))
EVAL = int(os.environ.get("RULES_BENCH_EVAL", "30"))
ROUNDS = int(os.environ.get("RULES_BENCH_ROUNDS", "6"))
IDLE = int(os.environ.get("RULES_BENCH_IDLE", "30"))
DEADLINE = float(os.environ.get("RULES_BENCH_DEADLINE", "3600"))
KELVIN_FLAGS = os.environ.get("RULES_BENCH_KELVIN_FLAGS", "").split()
T_START = time.time()


def left(what):
    if time.time() - T_START > DEADLINE:
        raise BenchError(f"RULES_BENCH_DEADLINE ({DEADLINE:.0f} s) passed during {what}")


def run(cmd, timeout):
    p = subprocess.run(cmd, capture_output=True, timeout=timeout)
    if p.returncode != 0:
        raise BenchError(f"{' '.join(cmd[:4])} ...: exit {p.returncode}: "
                         f"{p.stderr.decode('utf-8', 'replace')[-600:]}")
    return p


def pack_for_bench(tmp):
    """The pack with every group at EVAL seconds (group intervals removed,
    the config's evaluation_interval applies) and the names it mentions."""
    with open(PACK) as fh:
        text = fh.read()
    bench = re.sub(r"(?m)^\s+interval:\s.*\n", "", text)
    path = os.path.join(tmp, "pack.yml")
    with open(path, "w") as fh:
        fh.write(bench)
    exprs = re.findall(r"(?m)^\s+expr:\s*(.*(?:\n\s{10,}.*)*)", text)
    names = sorted(set(t for e in exprs for t in re.findall(r"\b[a-zA-Z_][a-zA-Z0-9_]*\b", e)))
    return path, names


def load(tmp, names):
    end = (int(time.time()) // 30 + 1) * 30 + AHEAD * 60
    start_s = end - MINUTES * 60
    hist = os.path.join(tmp, "hist")
    t0 = time.time()
    run([KELVIN, "sim", "history", "--scenario=healthy", f"--nodes={NODES}", f"--duration={MINUTES}m",
         f"--start={start_s}", f"--out={hist}"], timeout=1800)
    log(f"  sim history: {NODES} nodes x {MINUTES} min in {time.time() - t0:.0f} s")
    om = os.path.join(tmp, "pack.om")
    match = '{__name__=~"' + "|".join(names) + '"}'
    t0 = time.time()
    with open(om, "w") as fh:
        p = subprocess.run([KELVIN, "tsdb", "dump-openmetrics", f"--match={match}", hist], stdout=fh,
                           stderr=subprocess.PIPE, timeout=1800)
    if p.returncode != 0:
        raise BenchError(f"dump-openmetrics: {p.stderr.decode()[-400:]}")
    shutil.rmtree(hist)
    size = os.path.getsize(om)
    log(f"  the pack's series as OpenMetrics: {size / 1e9:.2f} GB in {time.time() - t0:.0f} s")
    dirs = {"prometheus": os.path.join(tmp, "prom"), "kelvin": os.path.join(tmp, "kelvin")}
    errors = {}

    def fill(key, tool):
        t = time.time()
        try:
            pd.backfill(tool, om, dirs[key], ["--max-block-duration=2h"], timeout=3000)
            log(f"  {key}: backfilled in {time.time() - t:.0f} s")
        except Exception as e:  # noqa: BLE001
            errors[key] = str(e)[-400:]
    ts = [threading.Thread(target=fill, args=("prometheus", PROMTOOL)),
          threading.Thread(target=fill, args=("kelvin", KELVIN))]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    os.remove(om)
    if errors:
        raise BenchError(f"backfill failed: {errors}")
    return dirs


def config(tmp, rules):
    path = os.path.join(tmp, f"prom-{'rules' if rules else 'idle'}.yml")
    with open(path, "w") as fh:
        fh.write(f"global:\n  scrape_interval: 15s\n  evaluation_interval: {EVAL}s\n")
        if rules:
            fh.write(f"rule_files: ['{rules}']\n")
        fh.write("scrape_configs: []\n")
    return path


def cmd(key, dirs, cfg, port):
    extra = ["--storage.tsdb.min-block-duration=2h", "--storage.tsdb.max-block-duration=2h"]
    if key == "prometheus":
        return pd.prometheus_cmd(PROMETHEUS, dirs[key], cfg, port, extra)
    return pd.kelvin_server_cmd(KELVIN, dirs[key], cfg, port, extra + KELVIN_FLAGS)


def group_metric(base, name):
    return metric_values(http_get(base + "/metrics"), name)


def query(base, q):
    import json
    body = http_get(base + "/api/v1/query?query=" + urllib.parse.quote(q), timeout=60)
    return json.loads(body)["data"]["result"]


def measure(key, dirs, tmp, pack):
    res = {}
    # idle: the same store, no rules
    port = free_port()
    logp = os.path.join(tmp, f"{key}-idle.log")
    with open(logp, "w") as lf:
        p = start(cmd(key, dirs, config(tmp, None), port), stdout=lf, stderr=lf)
    base = f"http://127.0.0.1:{port}"
    wait_up(base + "/-/ready", p, logp, deadline=300)
    time.sleep(5)
    c0 = cpu_seconds(p.pid)
    time.sleep(IDLE)
    res["idle_per_s"] = (cpu_seconds(p.pid) - c0) / IDLE
    stop(p, timeout=60)
    # with the pack
    port = free_port()
    logp = os.path.join(tmp, f"{key}-rules.log")
    with open(logp, "w") as lf:
        p = start(cmd(key, dirs, config(tmp, pack), port), stdout=lf, stderr=lf)
    base = f"http://127.0.0.1:{port}"
    wait_up(base + "/-/ready", p, logp, deadline=300)

    def min_iters():
        # rounds run: scheduled minus missed (a round that overran its
        # interval makes the server skip the next ones)
        m = http_get(base + "/metrics")
        it = metric_values(m, "prometheus_rule_group_iterations_total")
        miss = metric_values(m, "prometheus_rule_group_iterations_missed_total")
        run = [v - miss.get(k, 0) for k, v in it.items()]
        return (min(run) if run else 0), len(run)
    end = time.time() + 20 * EVAL + 120
    while time.time() < end and min_iters()[0] < 2:
        left("warm-up")
        time.sleep(0.5)
    i0, ngroups = min_iters()
    if i0 < 2:
        raise BenchError(f"{key}: the rule groups did not run (log {logp})")
    c0 = cpu_seconds(p.pid)
    t0 = time.time()
    end = time.time() + (ROUNDS + 5) * EVAL + 120
    while time.time() < end and min_iters()[0] < i0 + ROUNDS:
        left("measuring")
        time.sleep(0.2)
    i1, _ = min_iters()
    c1 = cpu_seconds(p.pid)
    rounds = i1 - i0
    if rounds <= 0:
        raise BenchError(f"{key}: no rounds while measuring")
    res["rounds"] = rounds
    res["groups"] = ngroups
    res["cpu_per_round"] = (c1 - c0) / rounds
    res["net_per_round"] = res["cpu_per_round"] - res["idle_per_s"] * (time.time() - t0) / rounds
    res["wall_per_round"] = sum(group_metric(base, "prometheus_rule_group_last_duration_seconds").values())
    res["samples"] = sum(group_metric(base, "prometheus_rule_group_last_evaluation_samples").values())
    res["failures"] = sum(group_metric(base, "prometheus_rule_evaluation_failures_total").values())
    res["series"] = {r["metric"].get("__name__", ""): int(float(r["value"][1])) for r in
                     query(base, 'count by (__name__) ({__name__=~".+:.+|ALERTS"})')}
    stop(p, timeout=60)
    return res


def main():
    if os.environ.get("BENCH_ONLY", "") not in ("", "rules"):
        return 0
    log(f"rules bench: the GPU alert pack over {NODES} simulated nodes, every group each {EVAL} s "
        f"(load average {os.getloadavg()[0]:.1f})")
    tmp = tempfile.mkdtemp(prefix="kelvin-rules-bench-", dir=os.environ.get("RULES_BENCH_DIR"))
    status = 1
    try:
        pack, names = pack_for_bench(tmp)
        dirs = load(tmp, names)
        res = {}
        for key in ("prometheus", "kelvin"):
            res[key] = measure(key, dirs, tmp, pack)
            r = res[key]
            log(f"  {key}: {r['cpu_per_round']:.3f} CPU s/round ({r['net_per_round']:.3f} net of idle "
                f"{r['idle_per_s']:.3f}/s) over {r['rounds']} rounds of {r['groups']} groups; "
                f"wall {r['wall_per_round']:.3f} s; {r['samples']:.0f} samples/round; failures {r['failures']:.0f}")
        p, k = res["prometheus"], res["kelvin"]
        log("")
        log("| per evaluation round | Prometheus 2.42 | kelvin | kelvin/Prometheus |")
        log("|---|---|---|---|")
        for label, key in (("CPU seconds", "cpu_per_round"), ("CPU seconds net of idle", "net_per_round"),
                           ("wall seconds (sum of groups)", "wall_per_round")):
            log(f"| {label} | {p[key]:.3f} | {k[key]:.3f} | **{k[key] / p[key]:.2f}** |")
        log(f"| samples written | {p['samples']:.0f} | {k['samples']:.0f} | |")
        agree = p["series"] == k["series"]
        log(f"agreement (series per recording rule and ALERTS): {'equal' if agree else 'DIFFERENT'}")
        if not agree:
            for n in sorted(set(p["series"]) | set(k["series"])):
                if p["series"].get(n) != k["series"].get(n):
                    log(f"  {n}: prometheus {p['series'].get(n)} kelvin {k['series'].get(n)}")
        goal = k["net_per_round"] <= 0.5 * p["net_per_round"]
        log(f"goal (kelvin <= 0.5 x Prometheus, net CPU per round): {'met' if goal else 'NOT met'}")
        status = 0 if agree and p["failures"] == 0 and k["failures"] == 0 else 1
    except BenchError as e:
        log(f"rules bench: {e}")
    finally:
        cleanup()
        shutil.rmtree(tmp, ignore_errors=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
