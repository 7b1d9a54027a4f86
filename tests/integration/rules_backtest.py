#!/usr/bin/python3
"""`kelvin rules backtest`: which alerts would have fired over stored history.

Storage: an OpenMetrics file backfilled with `kelvin tsdb create-blocks-from
openmetrics` (a sample every 30 s for 3 h): temp{gpu="0"} climbs from 50 to
100 and falls back, temp{gpu="1"} stays at 50, and temp{gpu="2"} crosses the
threshold for 3 minutes only (shorter than the alert's `for`).
Rules: Hot (temp > 80 for 5m), a recording rule gpu:temp:max = max(temp)
and HotFleet (gpu:temp:max > 95, no `for`), which reads what the recording
rule wrote in earlier rounds: the rules' own output is queryable.

The expected firings are computed here independently, from the samples:
at each evaluation time (from + k x 1m) the instant value is the newest
sample at or before it within 5 minutes; an alert becomes active at the
first evaluation where the condition holds, fires once it has held for its
`for`, and resolves at the first evaluation where it no longer holds.
Checked: --format=json gives exactly those firings (alertname, labels,
firing_at, resolved_at), gpu 2 never fires, a window that ends while Hot
fires gives resolved_at null; the answer is the same, byte for byte, with
KELVIN_BACKTEST_PER_ROUND=1 (every rule queried at each round instead of
answered from range queries: ManyHot reads ALERTS and gpu:temp:ahead a
series recorded after it, so both ways are mixed in the default run too); the text format names the same alerts; bad
flags exit 2, a broken rule file exits 1 with the file's error.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import kelvintest as kt  # noqa: E402

fail = kt.Failures()
T0 = 1700000000          # first sample (s)
STEP = 30
N = 3 * 3600 // STEP + 1  # 3 h


def temp(gpu, i):
    if gpu == 0:  # up 50 -> 100 over the first 90 min, then down again
        x = i * STEP
        return 50 + 50 * x / 5400 if x <= 5400 else 100 - 50 * (x - 5400) / 5400
    if gpu == 1:
        return 50.0
    # gpu 2: 85 for 3 minutes starting at 30 min
    return 85.0 if 1800 <= i * STEP < 1980 else 60.0


RULES = """groups:
  - name: g
    rules:
      - alert: Hot
        expr: temp > 80
        for: 5m
        labels:
          severity: warning
      - record: gpu:temp:max
        expr: max(temp)
      - alert: HotFleet
        expr: gpu:temp:max > 95
      - alert: ManyHot
        expr: count(ALERTS{alertname="Hot", alertstate="firing"}) >= 1
      - record: gpu:temp:ahead
        expr: gpu:temp:later + 0
      - record: gpu:temp:later
        expr: max(temp) - 1
"""


def value_at(series, t):
    """The newest sample at or before t within 5 minutes (PromQL's lookback)."""
    best = None
    for ts, v in series:
        if ts <= t and t - ts <= 300:
            best = v
        if ts > t:
            break
    return best


def expect(frm, to):
    temps = {g: [(T0 + i * STEP, temp(g, i)) for i in range(N)] for g in (0, 1, 2)}
    evals = list(range(frm, to + 1, 60))
    out = []

    def run(name, labels, cond, hold):
        active = None
        firing = None
        for t in evals:
            if cond(t):
                if active is None:
                    active = t
                if firing is None and t - active >= hold:
                    firing = t
            else:
                if firing is not None:
                    out.append((name, labels, firing, t))
                active = firing = None
        if firing is not None:
            out.append((name, labels, firing, None))

    for g in (0, 1, 2):
        run("Hot", {"alertname": "Hot", "gpu": str(g), "severity": "warning"},
            lambda t, g=g: (value_at(temps[g], t) or 0) > 80, 300)

    def fleet_max(t):
        vals = [value_at(temps[g], t) for g in (0, 1, 2)]
        vals = [v for v in vals if v is not None]
        return max(vals) if vals else None
    # the recording rule writes max(temp) at each evaluation; HotFleet reads
    # the newest recorded value (the same round's, as rules run in order)
    run("HotFleet", {"alertname": "HotFleet"}, lambda t: (fleet_max(t) or 0) > 95, 0)
    out.sort(key=lambda f: (f[2], f[0], sorted(f[1].items())))
    return out


def main():
    work = tempfile.mkdtemp(prefix="kelvin-backtest-")
    try:
        om = os.path.join(work, "in.om")
        with open(om, "w") as fh:
            fh.write("# TYPE temp gauge\n")
            for g in (0, 1, 2):
                for i in range(N):
                    fh.write(f'temp{{gpu="{g}"}} {temp(g, i)} {T0 + i * STEP}\n')
            fh.write("# EOF\n")
        data = os.path.join(work, "data")
        rc, out, err = kt.run_capture([kt.KELVIN, "tsdb", "create-blocks-from", "openmetrics", om, data],
                                      timeout=120)
        if not fail.check(rc == 0, f"backfill: exit {rc}: {err}"):
            return
        rules = os.path.join(work, "r.yml")
        with open(rules, "w") as fh:
            fh.write(RULES)

        def backtest(frm, to, fmt="json", extra=(), env=None):
            argv = [kt.KELVIN, "rules", "backtest", f"--storage.tsdb.path={data}", "--from", str(frm),
                    "--to", str(to), f"--format={fmt}", *extra, rules]
            if env is None:
                return kt.run_capture(argv, timeout=300)
            p = subprocess.run(argv, capture_output=True, timeout=300, env={**os.environ, **env})
            return p.returncode, p.stdout.decode(), p.stderr.decode()

        for frm, to in ((T0, T0 + 3 * 3600), (T0, T0 + 80 * 60)):
            rc, out, err = backtest(frm, to)
            if not fail.check(rc == 0, f"backtest {frm}..{to}: exit {rc}: {err}"):
                continue
            got = json.loads(out)
            fail.check(isinstance(got, list) and all(set(f) == {"alertname", "labels", "firing_at", "resolved_at"}
                                                     for f in got), f"json shape: {out[:300]}")
            rc2, out2, err2 = backtest(frm, to, env={"KELVIN_BACKTEST_PER_ROUND": "1"})
            fail.check(rc2 == 0 and out2 == out, f"backtest {frm}..{to}: per-round answer differs:\n{out}\n--\n{out2}")
            fail.check(any(f["alertname"] == "ManyHot" for f in got), "ManyHot (reads ALERTS) never fired")
            got_t = [(f["alertname"], f["labels"], f["firing_at"], f["resolved_at"]) for f in got
                     if f["alertname"] in ("Hot", "HotFleet")]
            want = expect(frm, to)
            fail.check(got_t == want, f"firings {frm}..{to}:\n  got  {got_t}\n  want {want}")
            fail.check(not any(f["labels"].get("gpu") == "2" for f in got), "gpu 2 fired despite its `for`")
        want_open = [f for f in expect(T0, T0 + 80 * 60) if f[3] is None]
        fail.check(len(want_open) >= 1, "the short window should end with Hot still firing (test data)")

        rc, out, err = backtest(T0, T0 + 3 * 3600, fmt="text")
        fail.check(rc == 0 and "Hot" in out and "HotFleet" in out and 'gpu="0"' in out,
                   f"text format: exit {rc}: {out[:400]} {err}")

        rc, out, err = backtest(T0, T0 - 60)
        fail.check(rc == 2 and "before" in err, f"--to before --from: exit {rc}: {err}")
        rc, out, err = kt.run_capture([kt.KELVIN, "rules", "backtest", "--from", "x", "--to", "1", rules])
        fail.check(rc == 2, f"bad --from: exit {rc}: {err}")
        with open(rules, "w") as fh:
            fh.write(RULES.replace("expr: temp > 80", "expr: temp >"))
        rc, out, err = backtest(T0, T0 + 600)
        fail.check(rc == 1 and "could not parse expression" in err, f"broken rule file: exit {rc}: {err}")
    finally:
        if not fail.items:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print("work dir kept:", work)
        fail.finish("rules_backtest")


if __name__ == "__main__":
    main()
