#!/usr/bin/python3
"""Scenario proofs for the GPU alert pack (rules/gpu.rules.yml): each failure
is simulated with `kelvin sim history`, the pack is run over it with `kelvin
rules backtest --format=json`, and the firings are compared with the
scenario's ground truth (DIR/scenario.json: which node and GPU fail, what
kind, and when: `at`).

- cooling-failure (12 h, 2 nodes, onset 2 h): the memory-junction
  temperature alert (GPUMemoryTemperatureHigh) fires on the failing GPU at
  least 10 minutes before its HBM reaches the limit (`at`, kind
  hbm-temp-limit).
- memory-leak (10 d, 2 nodes, onset 12 h, 4 GiB a day): the exhaustion
  prediction (GPUMemoryExhaustionPredicted) fires on the leaking GPU at
  least 24 hours before its memory runs out (`at`, gpu-memory-exhausted).
- xid-storm (6 h, 2 nodes): an XID alert (GPUXidError or GPUXidCritical)
  fires on the storming node within 10 minutes of the first XID.
- ecc-degradation (2 d, 2 nodes): GPUEccCorrectableErrorsRising fires on the
  GPU before its uncorrectable error (`at`), and GPUEccUncorrectableErrors
  within 5 minutes after it.
- fell-off-bus (6 h, 2 nodes): GPUFellOffBus fires on the lost GPU within
  10 minutes of the loss (`at`).
In every failure scenario nothing fires before `at` anywhere but on the
failing GPU (no false alarm on its neighbours or on the other node).
- healthy (7 d, 8 nodes): no alert of the pack fires at all.
A sanitizer build (5-10 times slower) runs the failure scenarios on the
failing node alone and the healthy one on 2 nodes.

The lead times are printed. Scenarios run two at a time; every run is
bounded in time.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import kelvintest as kt  # noqa: E402

fail = kt.Failures()
PACK = os.path.join(kt.SOURCE, "rules", "gpu.rules.yml")
START = 1767225600  # 2026-01-01T00:00:00Z
H, D = 3600, 86400


def sanitized():
    cache = os.path.join(os.environ.get("KELVIN_BUILD_DIR", ""), "CMakeCache.txt")
    try:
        with open(cache) as fh:
            return bool(re.search(r"^KELVIN_(SANITIZE|TSAN):BOOL=ON", fh.read(), re.M))
    except OSError:
        return False


def run(argv, timeout):
    p = subprocess.run(argv, capture_output=True, timeout=timeout)
    if p.returncode != 0:
        raise AssertionError(f"{' '.join(argv[:4])}: exit {p.returncode}: {p.stderr.decode()[-600:]}")
    return p.stdout.decode()


def scenario(work, name, duration_s, nodes, extra=()):
    """Simulates, backtests; returns (truth, firings)."""
    out = os.path.join(work, name)
    run([kt.KELVIN, "sim", "history", f"--scenario={name}", f"--duration={duration_s}s", f"--nodes={nodes}",
         f"--start={START}", f"--out={out}", *extra], timeout=900)
    with open(os.path.join(out, "scenario.json")) as fh:
        truth = json.load(fh)
    fired = json.loads(run([kt.KELVIN, "rules", "backtest", f"--storage.tsdb.path={out}", "--from", str(START),
                            "--to", str(START + duration_s), "--format=json", PACK], timeout=1800))
    shutil.rmtree(out, ignore_errors=True)
    return truth, fired


def on(f, node, gpu=None):
    lab = f["labels"]
    host = lab.get("Hostname") or lab.get("instance", "").split(":")[0]
    return host == node and (gpu is None or lab.get("gpu") == gpu)


def first(fired, names, node, gpu=None):
    ts = [f["firing_at"] for f in fired if f["alertname"] in names and on(f, node, gpu)]
    return min(ts) if ts else None


def no_false_alarms(name, truth, fired):
    fl = truth["failures"][0]
    early = [f for f in fired if f["firing_at"] < fl["at"] and not on(f, fl["node"], fl["gpu"])]
    fail.check(not early, f"{name}: alerts before the failure elsewhere than {fl['node']} gpu {fl['gpu']}: "
                          f"{[(f['alertname'], f['labels'].get('Hostname'), f['labels'].get('gpu')) for f in early[:5]]}")


def lead(name, what, t_alert, t_fail):
    if t_alert is None:
        print(f"  {name}: {what} never fired")
        return None
    d = t_fail - t_alert
    print(f"  {name}: {what} at {t_alert:.0f}, failure at {t_fail:.0f}: lead {d / 60:.1f} min ({d / 3600:.1f} h)")
    return d


def check_failure(name, truth, fired):
    fail.check(truth.get("scenario") == name and len(truth.get("failures", [])) == 1,
               f"{name}: scenario.json: {truth}")
    if len(truth.get("failures", [])) != 1:
        return
    fl = truth["failures"][0]
    node, gpu, at = fl["node"], fl["gpu"], fl["at"]
    no_false_alarms(name, truth, fired)
    if name == "cooling-failure":
        d = lead(name, "GPUMemoryTemperatureHigh", first(fired, {"GPUMemoryTemperatureHigh"}, node, gpu), at)
        fail.check(fl["kind"] == "hbm-temp-limit" and d is not None and d >= 600,
                   f"{name}: the junction-temperature alert must fire >= 10 min before the HBM limit (lead {d})")
    elif name == "memory-leak":
        d = lead(name, "GPUMemoryExhaustionPredicted", first(fired, {"GPUMemoryExhaustionPredicted"}, node, gpu), at)
        fail.check(fl["kind"] == "gpu-memory-exhausted" and d is not None and d >= 24 * H,
                   f"{name}: the exhaustion alert must fire >= 24 h before memory runs out (lead {d})")
    elif name == "xid-storm":
        t = first(fired, {"GPUXidError", "GPUXidCritical"}, node)
        d = lead(name, "an XID alert", t, at)
        fail.check(d is not None and -600 <= d <= 0, f"{name}: an XID alert within 10 min of the first XID ({d})")
    elif name == "ecc-degradation":
        d = lead(name, "GPUEccCorrectableErrorsRising", first(fired, {"GPUEccCorrectableErrorsRising"}, node, gpu), at)
        fail.check(d is not None and d > 0, f"{name}: rising correctable errors before the uncorrectable one ({d})")
        d2 = lead(name, "GPUEccUncorrectableErrors", first(fired, {"GPUEccUncorrectableErrors"}, node, gpu), at)
        fail.check(d2 is not None and -300 <= d2 <= 0, f"{name}: the uncorrectable error within 5 min ({d2})")
    elif name == "fell-off-bus":
        d = lead(name, "GPUFellOffBus", first(fired, {"GPUFellOffBus"}, node, gpu), at)
        fail.check(d is not None and -600 <= d <= 0, f"{name}: GPUFellOffBus within 10 min of the loss ({d})")


def main():
    work = tempfile.mkdtemp(prefix="kelvin-pack-proofs-")
    san = sanitized()
    n = 1 if san else 2  # a sanitizer build is 5-10 times slower: the failing node only
    cases = [
        ("cooling-failure", 12 * H, n, ["--onset=2h"]),
        ("memory-leak", 10 * D, n, ["--onset=12h", "--leak-per-day=4GiB"]),
        ("xid-storm", 6 * H, n, []),
        ("ecc-degradation", 2 * D, n, []),
        ("fell-off-bus", 6 * H, n, []),
        ("healthy", 7 * D, 2 if san else 8, []),
    ]
    results, errors = {}, {}
    lock = threading.Lock()

    def worker(queue):
        while True:
            with lock:
                if not queue:
                    return
                c = queue.pop(0)
            try:
                r = scenario(work, c[0], c[1], c[2], c[3])
                with lock:
                    results[c[0]] = r
            except Exception as e:  # noqa: BLE001 - reported below
                with lock:
                    errors[c[0]] = str(e)

    try:
        queue = list(cases)
        ts = [threading.Thread(target=worker, args=(queue,)) for _ in range(2)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        for name, err in errors.items():
            fail.check(False, f"{name}: {err}")
        for name, _, nodes, _ in cases:
            if name not in results:
                continue
            truth, fired = results[name]
            if name == "healthy":
                fail.check(truth.get("failures") == [], f"healthy: scenario.json lists failures: {truth}")
                print(f"  healthy: {nodes} nodes x 7 d: {len(fired)} alert firings")
                fail.check(not fired, f"healthy: alerts fired: "
                                      f"{[(f['alertname'], f['labels'].get('Hostname'), f['labels'].get('gpu'), f['firing_at']) for f in fired[:8]]}")
            else:
                check_failure(name, truth, fired)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        fail.finish("gpu_pack_scenarios")


if __name__ == "__main__":
    main()
