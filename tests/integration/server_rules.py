#!/usr/bin/python3
"""`kelvin server` evaluating rule files, as Prometheus 2.42 does.

A fixture target (tests/lib/fixture_targets.py) serves `cond{node="a"}`,
`cond{node="b"}` and `load` with values the test sets; the server scrapes it
every second and evaluates a rule file with a recording group and an alerting
group, both at a 1 s interval, with --rules.alert.for-grace-period=1s.
Checked:
(a) the recording rule writes `job:load:doubled{src="rule"}` = 2 x load;
(b) /api/v1/rules: groups sorted by file then name, each with its rules in
    file order, 2.42's fields (query as PromQL prints it, duration, labels,
    health ok, evaluationTime, lastEvaluation, type); a rule whose query fails
    at run time has health "err" and a lastError, and the group's
    prometheus_rule_evaluation_failures_total counts it; ?type=record keeps
    only recording rules;
(c) an alert with for: 4s is pending, then firing; /api/v1/alerts shows its
    labels (rule labels included) and expanded annotations; ALERTS and
    ALERTS_FOR_STATE are written (ALERTS_FOR_STATE = activeAt in seconds);
(d) restart (SIGTERM, same data directory): the firing alert keeps its
    activeAt (to the second) and fires again without waiting its `for` anew;
    an alert pending at shutdown (for: 60s) keeps the time it had pended
    (2.42's RestoreForState shifts activeAt by the downtime);
(e) the condition clears: the alert is resolved: gone from /api/v1/alerts,
    ALERTS for it has no current value (stale marker);
(f) a reload with a broken rule file fails (HTTP 500, reload metric 0) and the
    old rules keep running; a reload without the recording group removes it:
    its series has no current value two intervals later.
Every wait is bounded; every process is stopped, also on failure.

`--against-prometheus` runs the same checks against $KELVIN_PEERS/bin/prometheus,
to show the expectations are Prometheus's.
"""
import json
import os
import re
import shutil
import sys
import tempfile
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import fixture_targets as ft  # noqa: E402
import kelvintest as kt  # noqa: E402

AGAINST_PROMETHEUS = "--against-prometheus" in sys.argv[1:]
if AGAINST_PROMETHEUS:
    SERVER = [os.path.join(kt.PEERS, "bin", "prometheus")]
    PREFIX = "prometheus"
else:
    SERVER = [kt.KELVIN, "server"]
    PREFIX = "kelvin"
fail = kt.Failures()

RULES = """groups:
  - name: rec
    interval: 1s
    rules:
      - record: job:load:doubled
        expr: load * 2
        labels:
          src: rule
  - name: alerts
    interval: 1s
    rules:
      - alert: CondHigh
        expr: cond > 0
        for: 4s
        labels:
          severity: page
        annotations:
          summary: "node {{ $labels.node }} is at {{ $value }}"
          runbook: "https://example.invalid/{{ $labels.node }}"
      - alert: CondSlow
        expr: cond > 0
        for: 60s
      - alert: Broken
        expr: label_replace(cond, "node", "same", "", "")
"""

RULES_NO_REC = "groups:\n  - name: alerts\n" + RULES.split("  - name: alerts\n")[1]


def body(a, b, load):
    return [f'cond{{node="a"}} {a}\ncond{{node="b"}} {b}\nload {load}\n']


class Server:
    def __init__(self, work, cfg_path, data, log):
        self.port = kt.free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = log
        cmd = SERVER + [f"--config.file={cfg_path}", f"--web.listen-address=127.0.0.1:{self.port}",
                        f"--storage.tsdb.path={data}", "--web.enable-lifecycle",
                        "--rules.alert.for-grace-period=1s"]
        self.proc = kt.start(cmd, log=log)
        try:
            kt.wait_http(self.url + "/-/ready", deadline=30, proc=self.proc)
        except AssertionError as e:
            raise AssertionError(f"{e}; log:\n{self.tail()}") from None

    def tail(self, n=30):
        try:
            with open(self.log, errors="replace") as fh:
                return "".join(fh.readlines()[-n:])
        except OSError:
            return "(no log)"

    def api(self, path):
        if self.proc.poll() is not None:
            raise AssertionError(f"server exited with {self.proc.returncode}; log:\n{self.tail()}")
        status, _, b = kt.http(self.url + path)
        if status != 200:
            raise AssertionError(f"{path}: HTTP {status}: {b[:300]!r}")
        return json.loads(b)["data"]

    def query(self, q):
        return self.api("/api/v1/query?query=" + urllib.parse.quote(q))["result"]

    def alerts(self, name):
        return [a for a in self.api("/api/v1/alerts")["alerts"] if a["labels"].get("alertname") == name]

    def metric(self, name, **labels):
        status, _, b = kt.http(self.url + "/metrics")
        for line in b.decode(errors="replace").splitlines():
            m = re.match(r"^" + re.escape(name) + r"(\{[^}]*\})? (\S+)$", line)
            if m and all(f'{k}="{v}"' in (m.group(1) or "") for k, v in labels.items()):
                return float(m.group(2))
        return None

    def stop(self):
        rc = kt.stop(self.proc, timeout=20)
        # a sanitizer's leak or error report ends the process with non-zero
        fail.check(rc == 0, f"server exited with {rc}; log:\n{self.tail()}")


def wait(what, fn, deadline=20.0):
    return kt.wait_until(what, fn, deadline, step=0.2)


def parse_ts(s):
    """RFC 3339 with optional fraction and a Z or +hh:mm offset -> Unix seconds."""
    m = re.match(r"(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(\.\d+)?(Z|[+-]\d\d:\d\d)$", s)
    if not m:
        raise AssertionError(f"bad time {s!r}")
    import calendar
    t = calendar.timegm(tuple(int(m.group(i)) for i in range(1, 7)) + (0, 0, 0))
    if m.group(7):
        t += float(m.group(7))
    if m.group(8) != "Z":
        sign = 1 if m.group(8)[0] == "+" else -1
        t -= sign * (int(m.group(8)[1:3]) * 3600 + int(m.group(8)[4:6]) * 60)
    return t


def main():
    work = tempfile.mkdtemp(prefix="kelvin-rules-")
    srv = None
    fx = ft.FixtureServer()
    target = fx.add(ft.Target("t", body(1, 0, 3), mode="hold"))
    fx.start()
    try:
        rules = os.path.join(work, "r.yml")
        with open(rules, "w") as fh:
            fh.write(RULES)
        cfg = os.path.join(work, "prometheus.yml")
        with open(cfg, "w") as fh:
            fh.write("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                     "  external_labels: {cluster: c1}\n"
                     f"rule_files: ['{rules}']\n"
                     "scrape_configs:\n  - job_name: fx\n    metrics_path: /t\n"
                     f"    static_configs:\n      - targets: ['{fx.address}']\n")
        data = os.path.join(work, "data")
        srv = Server(work, cfg, data, os.path.join(work, "server1.log"))

        # (a) recording rule
        rec = wait("job:load:doubled", lambda: srv.query("job:load:doubled"))
        fail.check(len(rec) == 1 and float(rec[0]["value"][1]) == 6.0, f"job:load:doubled: {rec}")
        if rec:
            fail.check(rec[0]["metric"] == {"__name__": "job:load:doubled", "instance": fx.address,
                                            "job": "fx", "src": "rule"}, f"recorded labels: {rec[0]['metric']}")

        # (c) pending, then firing
        pend = wait("CondHigh pending or firing", lambda: srv.alerts("CondHigh"))
        fail.check(pend[0]["state"] in ("pending", "firing"), f"CondHigh first state: {pend}")
        firing = wait("CondHigh firing", lambda: [a for a in srv.alerts("CondHigh") if a["state"] == "firing"])
        a = firing[0]
        fail.check(a["labels"] == {"alertname": "CondHigh", "instance": fx.address, "job": "fx", "node": "a",
                                   "severity": "page"}, f"CondHigh labels: {a['labels']}")
        fail.check(a["annotations"] == {"summary": "node a is at 1",
                                        "runbook": "https://example.invalid/a"},
                   f"CondHigh annotations: {a['annotations']}")
        fail.check(a["value"] == "1e+00", f"CondHigh value: {a['value']!r}")
        active1 = parse_ts(a["activeAt"])
        fail.check(time.time() - active1 >= 3.5, f"CondHigh fired before its for: activeAt {a['activeAt']}")
        al = srv.query('ALERTS{alertname="CondHigh"}')
        fail.check(len(al) == 1 and al[0]["metric"].get("alertstate") == "firing"
                   and al[0]["metric"].get("severity") == "page", f"ALERTS: {al}")
        fs = srv.query('ALERTS_FOR_STATE{alertname="CondHigh"}')
        fail.check(len(fs) == 1 and float(fs[0]["value"][1]) == float(int(active1)) and
                   "alertstate" not in fs[0]["metric"], f"ALERTS_FOR_STATE: {fs} (activeAt {active1})")
        slow = srv.alerts("CondSlow")
        fail.check(len(slow) == 1 and slow[0]["state"] == "pending", f"CondSlow: {slow}")
        slow_active = parse_ts(slow[0]["activeAt"]) if slow else 0

        # (b) /api/v1/rules
        groups = srv.api("/api/v1/rules")["groups"]
        fail.check([g["name"] for g in groups] == ["alerts", "rec"], f"group order: {[g['name'] for g in groups]}")
        for g in groups:
            fail.check(g["file"] == rules and g["interval"] == 1 and g["limit"] == 0 and
                       isinstance(g["evaluationTime"], (int, float)) and g["lastEvaluation"].startswith("20"),
                       f"group fields: { {k: v for k, v in g.items() if k != 'rules'} }")
        ga = next((g for g in groups if g["name"] == "alerts"), {"rules": []})
        fail.check([r["name"] for r in ga["rules"]] == ["CondHigh", "CondSlow", "Broken"],
                   f"alert rules: {[r['name'] for r in ga['rules']]}")
        if len(ga["rules"]) == 3:
            ch, _, br = ga["rules"]
            fail.check(ch["type"] == "alerting" and ch["state"] == "firing" and ch["query"] == "cond > 0" and
                       ch["duration"] == 4 and ch["keepFiringFor"] == 0 and ch["labels"] == {"severity": "page"} and
                       ch["health"] == "ok" and "lastError" not in ch and len(ch["alerts"]) == 1,
                       f"CondHigh rule: {ch}")
            fail.check(br["health"] == "err" and "same labelset" in br.get("lastError", ""),
                       f"Broken rule: health {br.get('health')}, lastError {br.get('lastError')!r}")
            fail.check(br["query"] == 'label_replace(cond, "node", "same", "", "")', f"Broken query: {br['query']}")
        gr = next((g for g in groups if g["name"] == "rec"), {"rules": [{}]})
        r0 = gr["rules"][0]
        fail.check(r0.get("type") == "recording" and r0.get("query") == "load * 2" and
                   r0.get("labels") == {"src": "rule"} and r0.get("health") == "ok" and "state" not in r0,
                   f"recording rule: {r0}")
        only_rec = srv.api("/api/v1/rules?type=record")["groups"]
        fail.check(all(r["type"] == "recording" for g in only_rec for r in g["rules"]) and
                   sum(len(g["rules"]) for g in only_rec) == 1, f"?type=record: {only_rec}")
        key = f"{rules};alerts"
        fails = srv.metric("prometheus_rule_evaluation_failures_total", rule_group=key)
        fail.check(fails is not None and fails >= 1, f"evaluation failures of {key}: {fails}")
        iters = srv.metric("prometheus_rule_group_iterations_total", rule_group=key)
        fail.check(iters is not None and iters >= 3, f"iterations of {key}: {iters}")

        # (d) restart
        time.sleep(2)
        pended = time.time() - slow_active
        down_at = time.time()
        srv.stop()
        time.sleep(2)
        srv = Server(work, cfg, data, os.path.join(work, "server2.log"))
        back = wait("CondHigh firing after restart",
                    lambda: [a for a in srv.alerts("CondHigh") if a["state"] == "firing"], deadline=30)
        fail.check(int(parse_ts(back[0]["activeAt"])) == int(active1),
                   f"CondHigh activeAt after restart {back[0]['activeAt']} vs before {active1}")
        fail.check(time.time() - down_at < 4 + 2 + 8,
                   "CondHigh took its whole `for` again after the restart")

        def slow_restored():
            s = srv.alerts("CondSlow")
            if not s:
                return None
            # restored: activeAt moved back by the time it had pended
            return s if time.time() - parse_ts(s[0]["activeAt"]) >= pended - 1.5 else None
        s2 = wait("CondSlow's pending time restored", slow_restored, deadline=15)
        fail.check(s2[0]["state"] == "pending", f"CondSlow after restart: {s2}")

        # (e) resolution
        target.set_bodies(body(0, 0, 3))
        wait("CondHigh resolved", lambda: not srv.alerts("CondHigh"), deadline=15)
        wait("ALERTS{CondHigh} gone", lambda: not srv.query('ALERTS{alertname="CondHigh"}'), deadline=10)

        # (f) reloads
        with open(rules, "w") as fh:
            fh.write(RULES.replace("expr: load * 2", "expr: load *"))
        st, _, b = kt.http(srv.url + "/-/reload", method="POST")
        fail.check(st == 500, f"reload with a broken rule file: HTTP {st} {b[:200]!r}")
        fail.check(srv.metric(f"{PREFIX}_config_last_reload_successful") == 0, "reload metric after a bad reload")
        names = [g["name"] for g in srv.api("/api/v1/rules")["groups"]]
        fail.check(names == ["alerts", "rec"], f"groups after a bad reload: {names}")
        fail.check(len(srv.query("job:load:doubled")) == 1, "recording stopped after a bad reload")
        with open(rules, "w") as fh:
            fh.write(RULES_NO_REC)
        st, _, b = kt.http(srv.url + "/-/reload", method="POST")
        fail.check(st == 200, f"good reload: HTTP {st} {b[:200]!r}")
        names = [g["name"] for g in srv.api("/api/v1/rules")["groups"]]
        fail.check(names == ["alerts"], f"groups after removing rec: {names}")
        wait("job:load:doubled stale", lambda: not srv.query("job:load:doubled"), deadline=15)
        srv.stop()
    finally:
        fx.stop()
        if srv is not None and srv.proc.poll() is None and fail.items:
            print(srv.tail())
        kt.stop_all()
        if not fail.items:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print("work dir kept:", work)
        fail.finish("server_rules" + (" (against prometheus)" if AGAINST_PROMETHEUS else ""))


if __name__ == "__main__":
    main()
