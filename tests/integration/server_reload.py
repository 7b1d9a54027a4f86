#!/usr/bin/python3
"""`kelvin server` configuration reload, as Prometheus 2.42 does it.

Fixture targets (tests/lib/fixture_targets.py) on one loopback port; the
server runs with --web.enable-lifecycle on a config with a static job
("static", target /s1) and a file_sd job ("filesd", a JSON file in the temp
directory listing /f1), scrape interval 1 s. Checked:
- start: /-/healthy and /-/ready answer 200; /api/v1/targets lists both
  targets, health "up", with their labels; <prefix>_config_last_reload_successful 1.
(a) valid changes by SIGHUP: a job "extra" is added (label stage="one"),
  then its label changes to stage="two": the new targets appear with their
  labels, the old one goes; the metric stays 1; the unchanged static
  target is not restarted: its scrapes keep a steady 1 s cadence through
  every reload (no gap over 1.6 s, none under 0.4 s), and its
  scrape_series_added is non-zero only once (its series cache is kept).
(b) an invalid config by POST /-/reload (an unknown field): HTTP 4xx/5xx
  whose body names the field; the old targets are still listed and
  scraped; the metric is 0; the fixed config posted again: 200, metric 1.
(c) the file_sd file rewritten (atomic rename) to list /f2 with other
  labels: within 10 s the filesd job's only target is /f2, /f1 is no longer
  scraped; then the file deleted: within 10 s the filesd job has no targets.
  After shutdown the data directory is dumped: the series of every target
  that went away ends with a staleness marker (NaN).
(d) a second server without --web.enable-lifecycle answers POST /-/reload
  with 403 "Lifecycle API is not enabled." and keeps running.
Every wait is bounded; every process is stopped, also on failure.

`--against-prometheus` runs the same checks against
$KELVIN_PEERS/bin/prometheus (metric prefix prometheus_, promtool's dump),
to show the test's expectations are Prometheus's.
"""
import json
import os
import re
import shutil
import signal
import subprocess
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
    DUMP = [os.path.join(kt.PEERS, "bin", "promtool"), "tsdb", "dump"]
    PREFIX = "prometheus"
else:
    SERVER = [kt.KELVIN, "server"]
    DUMP = [kt.KELVIN, "tsdb", "dump"]
    PREFIX = "kelvin"
RELOAD_METRIC = f"{PREFIX}_config_last_reload_successful"
fail = kt.Failures()


def config(addr, sd_path, extra_stage=None, invalid=False):
    c = ("global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\n"
         "scrape_configs:\n"
         "  - job_name: static\n    metrics_path: /s1\n"
         f"    static_configs:\n      - targets: ['{addr}']\n        labels: {{role: static}}\n"
         "  - job_name: filesd\n"
         f"    file_sd_configs:\n      - files: ['{sd_path}']\n")
    if extra_stage:
        c += ("  - job_name: extra\n    metrics_path: /x1\n"
              + ("    scrape_intervall: 1s\n" if invalid else "")
              + f"    static_configs:\n      - targets: ['{addr}']\n        labels: {{stage: {extra_stage}}}\n")
    return c


def write_atomic(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as fh:
        fh.write(text)
    os.replace(tmp, path)


def sd_groups(addr, path, group):
    return json.dumps([{"targets": [addr], "labels": {"__metrics_path__": path, "group": group}}])


class Server:
    def __init__(self, work, name, cfg_path, lifecycle):
        self.port = kt.free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.data = os.path.join(work, f"data-{name}")
        self.log = os.path.join(work, f"{name}.log")
        cmd = SERVER + [f"--config.file={cfg_path}", f"--web.listen-address=127.0.0.1:{self.port}",
                        f"--storage.tsdb.path={self.data}"]
        if lifecycle:
            cmd.append("--web.enable-lifecycle")
        self.proc = kt.start(cmd, log=self.log)

    def ready(self, deadline=30):
        try:
            kt.wait_http(self.url + "/-/healthy", deadline=deadline, proc=self.proc)
        except AssertionError as e:
            raise AssertionError(f"{e}; log:\n{self.tail()}") from None
        end = time.time() + deadline
        while time.time() < end:
            if kt.http(self.url + "/-/ready")[0] == 200:
                return
            time.sleep(0.1)
        raise AssertionError(f"{self.url}/-/ready not 200 within {deadline}s")

    def alive(self):
        if self.proc.poll() is not None:
            raise AssertionError(f"server exited with {self.proc.returncode}; log:\n{self.tail()}")

    def tail(self, n=30):
        try:
            with open(self.log, errors="replace") as fh:
                return "".join(fh.readlines()[-n:])
        except OSError:
            return "(no log)"

    def targets(self):
        """[(job, path, labels, health, lastError)] of the active targets."""
        self.alive()
        status, _, body = kt.http(self.url + "/api/v1/targets")
        if status != 200:
            raise AssertionError(f"/api/v1/targets: HTTP {status}: {body[:200]!r}")
        doc = json.loads(body)
        out = []
        for t in doc["data"]["activeTargets"]:
            out.append((t["scrapePool"], urllib.parse.urlsplit(t["scrapeUrl"]).path, t["labels"],
                        t["health"], t.get("lastError", "")))
        return sorted(out, key=lambda x: (x[0], x[1]))

    def reload_metric(self):
        self.alive()
        status, _, body = kt.http(self.url + "/metrics")
        if status != 200:
            raise AssertionError(f"/metrics: HTTP {status}")
        m = re.search(r"^" + RELOAD_METRIC + r"(?:\{[^}]*\})? (\S+)", body.decode(errors="replace"), re.M)
        return float(m.group(1)) if m else None


def wait_for(what, cond, deadline):
    """Polls cond() (returns (ok, detail)) until ok or the deadline."""
    end = time.time() + deadline
    detail = None
    while True:
        ok, detail = cond()
        if ok:
            return True
        if time.time() >= end:
            fail.check(False, f"{what}: not within {deadline}s; last seen: {detail}")
            return False
        time.sleep(0.2)


def jobs_paths(targets):
    return sorted((j, p) for j, p, _, _, _ in targets)


def main():
    work = tempfile.mkdtemp(prefix="kelvin-server-reload-")
    srv = None
    try:
        if not os.access(SERVER[0], os.X_OK):
            raise AssertionError(f"{SERVER[0]} is missing")
        targets = [ft.Target(n, [f'reload_metric{{t="{n}"}} 1\n']) for n in ("s1", "f1", "f2", "x1")]
        srv = ft.FixtureServer(targets).start()
        addr = srv.address
        cfg = os.path.join(work, "prometheus.yml")
        sd = os.path.join(work, "sd", "targets.json")
        os.makedirs(os.path.dirname(sd))
        write_atomic(sd, sd_groups(addr, "/f1", "a"))
        write_atomic(cfg, config(addr, sd))

        # (d) runs alongside: a server without the lifecycle API and no jobs.
        cfg_d = os.path.join(work, "nolifecycle.yml")
        write_atomic(cfg_d, "global:\n  scrape_interval: 1s\n")
        srv_d = Server(work, "nolifecycle", cfg_d, lifecycle=False)
        s = Server(work, "main", cfg, lifecycle=True)
        s.ready()
        srv_d.ready()
        status, _, body = kt.http(srv_d.url + "/-/reload", method="POST", data=b"")
        fail.check(status == 403, f"(d) POST /-/reload without --web.enable-lifecycle: HTTP {status}, want 403")
        fail.check(b"Lifecycle API is not enabled." in body,
                   f"(d) POST /-/reload without --web.enable-lifecycle: body {body[:200]!r}, "
                   "want 'Lifecycle API is not enabled.'")
        time.sleep(0.3)
        srv_d.alive()
        fail.check(kt.stop(srv_d.proc) == 0, f"(d) server exited with {srv_d.proc.returncode} on SIGTERM")

        def targets_are(want, healthy=True):
            def cond():
                ts = s.targets()
                ok = jobs_paths(ts) == sorted(want) and (not healthy or all(h == "up" for *_, h, _ in ts))
                return ok, ts
            return cond

        wait_for("start: targets static /s1 and filesd /f1 up",
                 targets_are([("static", "/s1"), ("filesd", "/f1")]), 15)
        ts = {(j, p): l for j, p, l, _, _ in s.targets()}
        fail.check(ts.get(("static", "/s1"), {}).get("role") == "static",
                   f"start: static target labels {ts.get(('static', '/s1'))}")
        fail.check(ts.get(("filesd", "/f1"), {}).get("group") == "a",
                   f"start: filesd target labels {ts.get(('filesd', '/f1'))}")
        fail.check(s.reload_metric() == 1, f"start: {RELOAD_METRIC} = {s.reload_metric()}, want 1")

        # (a) valid changes by SIGHUP.
        cadence_from = time.monotonic()
        write_atomic(cfg, config(addr, sd, extra_stage="one"))
        s.proc.send_signal(signal.SIGHUP)

        def extra_stage_is(stage):
            def cond():
                ts = s.targets()
                extra = [(p, l.get("stage"), h) for j, p, l, h, _ in ts if j == "extra"]
                return extra == [("/x1", stage, "up")] and len(ts) == 3, ts
            return cond

        wait_for("(a) SIGHUP adding job extra: target /x1 stage=one up", extra_stage_is("one"), 10)
        fail.check(s.reload_metric() == 1, f"(a) {RELOAD_METRIC} = {s.reload_metric()} after a valid reload")
        time.sleep(1.5)
        write_atomic(cfg, config(addr, sd, extra_stage="two"))
        s.proc.send_signal(signal.SIGHUP)
        wait_for("(a) SIGHUP changing label: target /x1 stage=two up, stage=one gone", extra_stage_is("two"), 10)
        fail.check(s.reload_metric() == 1, f"(a) {RELOAD_METRIC} = {s.reload_metric()} after a valid reload")

        # (b) an invalid config by POST /-/reload, then fixed.
        time.sleep(1.5)
        write_atomic(cfg, config(addr, sd, extra_stage="two", invalid=True))
        status, _, body = kt.http(s.url + "/-/reload", method="POST", data=b"")
        fail.check(400 <= status <= 599, f"(b) POST /-/reload of an invalid config: HTTP {status}, want an error")
        fail.check(b"scrape_intervall" in body, f"(b) the error does not name the bad field: {body[:300]!r}")
        fail.check(s.reload_metric() == 0, f"(b) {RELOAD_METRIC} = {s.reload_metric()} after a failed reload, want 0")
        before = {t.name: t.count for t in srv.targets()}
        time.sleep(2.5)
        after = {t.name: t.count for t in srv.targets()}
        for n in ("s1", "f1", "x1"):
            fail.check(after[n] >= before[n] + 2, f"(b) after the failed reload target {n} was scraped "
                                                  f"{after[n] - before[n]} times in 2.5 s")
        fail.check(jobs_paths(s.targets()) == sorted([("static", "/s1"), ("filesd", "/f1"), ("extra", "/x1")]),
                   f"(b) targets after the failed reload: {s.targets()}")
        write_atomic(cfg, config(addr, sd, extra_stage="two"))
        status, _, body = kt.http(s.url + "/-/reload", method="POST", data=b"")
        fail.check(status == 200, f"(b) POST /-/reload of the fixed config: HTTP {status} {body[:200]!r}")
        fail.check(s.reload_metric() == 1, f"(b) {RELOAD_METRIC} = {s.reload_metric()} after the fix, want 1")
        time.sleep(1.5)
        cadence_to = time.monotonic()

        # The static target kept its cadence through all of it.
        times = [r["mono"] for r in srv["s1"].requests if cadence_from - 1.5 <= r["mono"] <= cadence_to]
        gaps = [round(b - a, 3) for a, b in zip(times, times[1:])]
        fail.check(len(gaps) >= 5 and all(0.4 <= g <= 1.6 for g in gaps),
                   f"(a,b) the unchanged static target's scrape gaps across the reloads: {gaps} (want ~1 s each)")

        # (c) file_sd rewritten, then deleted.
        write_atomic(sd, sd_groups(addr, "/f2", "b"))
        ok = wait_for("(c) file_sd rewritten: filesd job's only target /f2 (group b)",
                      targets_are([("static", "/s1"), ("filesd", "/f2"), ("extra", "/x1")]), 10)
        if ok:
            ts = {(j, p): l for j, p, l, _, _ in s.targets()}
            fail.check(ts.get(("filesd", "/f2"), {}).get("group") == "b",
                       f"(c) filesd target labels {ts.get(('filesd', '/f2'))}")
            time.sleep(1.2)
            f1 = srv["f1"].count
            time.sleep(2.0)
            fail.check(srv["f1"].count == f1, f"(c) /f1 still scraped after the file_sd rewrite "
                                             f"({srv['f1'].count - f1} times in 2 s)")
        os.unlink(sd)
        wait_for("(c) file_sd file deleted: the filesd job has no targets",
                 targets_are([("static", "/s1"), ("extra", "/x1")]), 10)
        time.sleep(2.5)  # staleness markers of the vanished target are written after an interval or two
        s.alive()
        rc = kt.stop(s.proc, timeout=15)
        fail.check(rc == 0, f"server exited with {rc} on SIGTERM; log:\n{s.tail()}")

        # The stored data: removed targets' series end stale; the static
        # target's series cache survived every reload.
        r = subprocess.run(DUMP + [s.data], capture_output=True, text=True, timeout=60)
        if r.returncode != 0:
            raise AssertionError(f"{' '.join(DUMP)} {s.data}: exit {r.returncode}: {r.stderr[-1000:]}")
        series = {}
        for line in r.stdout.splitlines():
            m = re.match(r"^(\{.*\}) (\S+) (-?\d+)$", line)
            if not m:
                raise AssertionError(f"unparseable dump line {line!r}")
            series.setdefault(m.group(1), []).append((int(m.group(3)), m.group(2)))
        for k in series:
            series[k].sort()

        def find(name, *parts):
            return [v for k, v in series.items()
                    if k.startswith('{__name__="' + name + '"') and all(p in k for p in parts)]

        for what, parts in (("extra stage=one", ('stage="one"',)), ("filesd /f1", ('t="f1"',)),
                            ("filesd /f2", ('t="f2"',))):
            found = find("reload_metric", *parts)
            fail.check(len(found) == 1 and found[0][-1][1] == "NaN",
                       f"dump: reload_metric of removed target {what}: want one series ending with NaN, got "
                       f"{[v[-3:] for v in found]}")
        added = find("scrape_series_added", 'job="static"')
        fail.check(len(added) == 1 and sum(1 for _, v in added[0] if v not in ("0", "NaN")) == 1,
                   f"dump: scrape_series_added of the static target: want one non-zero value, got "
                   f"{[[v for _, v in a] for a in added]}")
    finally:
        if srv is not None:
            srv.stop()
        if fail.items or sys.exc_info()[1] is not None:
            print(f"work directory kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
        fail.finish("server_reload" + (" (against Prometheus)" if AGAINST_PROMETHEUS else ""))


if __name__ == "__main__":
    main()
