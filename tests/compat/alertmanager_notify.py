#!/usr/bin/python3
"""Kelvin's notifier against the real Alertmanager 0.25.

Two Alertmanagers ($KELVIN_PEERS/bin/prometheus-alertmanager, a null
receiver, no clustering) run on free loopback ports; the second one under
--web.route-prefix=/am/. `kelvin server` gets a prometheus.yml with:
  - one scrape job on a tiny HTTP target this script serves, whose
    kelvin_test_condition value the script sets (0 or 1);
  - an alerting rule on it (1 s evaluation) with labels and annotations
    that use $labels, $value and $externalLabels;
  - external_labels (one of them overridden by the rule's own label);
  - alerting.alertmanagers: set 0 static (plus a target its
    relabel_configs drop), set 1 through file_sd with path_prefix /am/.
The script waits until Kelvin lists both Alertmanagers
(/api/v1/alertmanagers, the dropped one too), then raises the condition
and reads back, through each Alertmanager's own API (GET
/api/v2/alerts), that the alert arrives with the right labels (external
ones included, the rule's winning) and expanded annotations; checks
Kelvin's notification metrics (2.42's names); then clears the condition
and waits for the alert to be resolved: gone from both Alertmanagers'
active alerts well before the 4 minutes its last notification was valid
for, so it was the resolved notification that ended it. Every wait is
bounded; every process is stopped, even on failure.
"""
import json
import os
import shutil
import sys
import tempfile
import threading
import time
import traceback
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import kelvintest as kt  # noqa: E402

AM_BIN = os.path.join(kt.PEERS, "bin", "prometheus-alertmanager")
# Debian's Alertmanager reads its default notification template from
# /usr/share/prometheus/alertmanager/{default,email}.tmpl. scripts/peers
# installs those files there when they are missing (it unpacks the rest under
# build/peers); where it could not, the Alertmanager runs in its own mount
# namespace (unshare -rm: no root needed, nothing changes outside it) with
# the package's usr/share bound over /usr/share.
AM_SHARE = os.path.join(kt.PEERS, "x-prometheus-alertmanager", "usr", "share")
AM_TMPL = "/usr/share/prometheus/alertmanager/email.tmpl"
ALERT = "KelvinTestCondition"


class Stop(Exception):
    """A failure already recorded that makes the rest pointless."""


class Target:
    """Serves kelvin_test_condition{unit="u1"} <value> on /metrics."""

    def __init__(self):
        self.value = 0
        outer = self

        class H(BaseHTTPRequestHandler):
            def do_GET(self):
                body = ("# TYPE kelvin_test_condition gauge\n"
                        f'kelvin_test_condition{{unit="u1"}} {outer.value}\n').encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *a):
                pass

        self.srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.port = self.srv.server_address[1]
        self.th = threading.Thread(target=self.srv.serve_forever, daemon=True)
        self.th.start()

    def stop(self):
        self.srv.shutdown()
        self.srv.server_close()


def start_am(tmp, name, prefix=None):
    port = kt.free_port()
    cfg = os.path.join(tmp, name + ".yml")
    with open(cfg, "w") as fh:
        fh.write("route:\n  receiver: 'null'\n  group_wait: 1s\nreceivers:\n- name: 'null'\n")
    wrap = [] if os.path.exists(AM_TMPL) else \
        ["unshare", "-rm", "sh", "-c", 'mount --bind "$0" /usr/share && exec "$@"', AM_SHARE]
    cmd = wrap + [AM_BIN, f"--config.file={cfg}", f"--storage.path={os.path.join(tmp, name + '-data')}",
           f"--web.listen-address=127.0.0.1:{port}", "--cluster.listen-address="]
    if prefix:
        cmd.append(f"--web.route-prefix={prefix}")
    log = os.path.join(tmp, name + ".log")
    p = kt.start(cmd, log=log)
    base = f"http://127.0.0.1:{port}" + (prefix.rstrip("/") if prefix else "")
    try:
        kt.wait_http(base + "/-/ready", proc=p)
    except AssertionError as e:
        raise AssertionError(f"{name}: {e}; its log:\n{tail(log)}") from None
    return port, base


def am_alerts(base):
    status, _, body = kt.http(base + "/api/v2/alerts")
    if status != 200:
        raise AssertionError(f"GET {base}/api/v2/alerts: HTTP {status}: {body[:200]!r}")
    return [a for a in json.loads(body) if a.get("labels", {}).get("alertname") == ALERT]


def wait_until(fn, deadline, step=0.25):
    """Calls fn until it returns something true or deadline seconds pass;
    returns the last result."""
    end = time.time() + deadline
    while True:
        r = fn()
        if r or time.time() > end:
            return r
        time.sleep(step)


def parse_time(s):
    # Alertmanager writes RFC 3339 with up to nanoseconds; keep microseconds
    s = s.replace("Z", "+00:00")
    if "." in s:
        head, rest = s.split(".", 1)
        frac, tz = rest[:rest.index("+")], rest[rest.index("+"):]
        s = head + "." + (frac + "000000")[:6] + tz
    return datetime.fromisoformat(s)


def tail(path, n=20):
    try:
        with open(path, errors="replace") as fh:
            return "".join(fh.readlines()[-n:])
    except OSError:
        return "(no log)"


f = kt.Failures()
tmp = tempfile.mkdtemp(prefix="kelvin-am-")
target = None
try:
    if not os.access(AM_BIN, os.X_OK) or not os.path.isdir(AM_SHARE):
        print(f"alertmanager_notify: {AM_BIN} or {AM_SHARE} is missing (run scripts/peers)")
        sys.exit(1)
    target = Target()
    p1, am1 = start_am(tmp, "am1")
    p2, am2 = start_am(tmp, "am2", prefix="/am/")

    sd = os.path.join(tmp, "am_sd.json")
    with open(sd, "w") as fh:
        json.dump([{"targets": [f"127.0.0.1:{p2}"], "labels": {"env": "test"}}], fh)
    with open(os.path.join(tmp, "rules.yml"), "w") as fh:
        fh.write(f"""groups:
- name: compat
  interval: 1s
  rules:
  - alert: {ALERT}
    expr: kelvin_test_condition > 0
    labels:
      severity: page
      region: own
    annotations:
      summary: "Condition on {{{{ $labels.instance }}}} is {{{{ $value }}}}"
      description: "cluster {{{{ $externalLabels.cluster }}}}, unit {{{{ $labels.unit }}}}"
""")
    with open(os.path.join(tmp, "prometheus.yml"), "w") as fh:
        fh.write(f"""global:
  scrape_interval: 1s
  evaluation_interval: 1s
  external_labels:
    cluster: test-cluster
    region: loopback
rule_files: [rules.yml]
scrape_configs:
- job_name: cond
  static_configs:
  - targets: ['127.0.0.1:{target.port}']
alerting:
  alertmanagers:
  - static_configs:
    - targets: ['127.0.0.1:{p1}', '127.0.0.1:1']
    relabel_configs:
    - source_labels: [__address__]
      regex: '127\\.0\\.0\\.1:1'
      action: drop
  - path_prefix: /am/
    timeout: 5s
    file_sd_configs:
    - files: ['{sd}']
      refresh_interval: 1s
""")
    kport = kt.free_port()
    kurl = f"http://127.0.0.1:{kport}"
    klog = os.path.join(tmp, "kelvin.log")
    kp = kt.start([kt.KELVIN, "server", f"--config.file={os.path.join(tmp, 'prometheus.yml')}",
                   f"--web.listen-address=127.0.0.1:{kport}",
                   f"--storage.tsdb.path={os.path.join(tmp, 'data')}"], log=klog)
    kt.wait_http(kurl + "/-/ready", proc=kp)

    want_active = {f"http://127.0.0.1:{p1}/api/v2/alerts", f"http://127.0.0.1:{p2}/am/api/v2/alerts"}
    want_dropped = {"http://127.0.0.1:1/api/v2/alerts"}
    last = {}

    def ams_listed():
        s, _, b = kt.http(kurl + "/api/v1/alertmanagers")
        if s != 200:
            last["am"] = f"HTTP {s}: {b[:200]!r}"
            return False
        d = json.loads(b).get("data", {})
        act = {x["url"] for x in d.get("activeAlertmanagers", [])}
        drp = {x["url"] for x in d.get("droppedAlertmanagers", [])}
        last["am"] = f"active {sorted(act)}, dropped {sorted(drp)}"
        return act == want_active and drp == want_dropped

    if not f.check(wait_until(ams_listed, 30),
                   "Kelvin's /api/v1/alertmanagers never listed "
                   f"active {sorted(want_active)} and dropped {sorted(want_dropped)}: last {last.get('am')} "
                   "(is the notifier wired into `kelvin server`?)"):
        print("kelvin log (tail):\n" + tail(klog))
        raise Stop()

    t_fire = datetime.now(timezone.utc)
    target.value = 1
    want_labels = {"alertname": ALERT, "severity": "page", "region": "own", "cluster": "test-cluster",
                   "instance": f"127.0.0.1:{target.port}", "job": "cond", "unit": "u1"}
    want_ann = {"summary": f"Condition on 127.0.0.1:{target.port} is 1",
                "description": "cluster test-cluster, unit u1"}
    for name, base in (("alertmanager 1 (static)", am1), ("alertmanager 2 (file_sd, /am/)", am2)):
        got = wait_until(lambda: am_alerts(base), 30)
        if not f.check(len(got) == 1, f"{name}: expected one {ALERT} alert within 30 s, got {got!r}"):
            continue
        a = got[0]
        f.check(a["labels"] == want_labels, f"{name}: labels {a['labels']!r}, want {want_labels!r}")
        f.check(a.get("annotations") == want_ann, f"{name}: annotations {a.get('annotations')!r}, want {want_ann!r}")
        f.check(a.get("status", {}).get("state") == "active", f"{name}: state {a.get('status')!r}")
        gen = a.get("generatorURL", "")
        f.check("/graph?g0.expr=kelvin_test_condition" in gen and gen.endswith("&g0.tab=1"),
                f"{name}: generatorURL {gen!r}")
        starts = parse_time(a["startsAt"])
        f.check(abs((starts - t_fire).total_seconds()) < 30, f"{name}: startsAt {a['startsAt']} vs {t_fire}")
        ends = parse_time(a["endsAt"])
        f.check(ends > datetime.now(timezone.utc), f"{name}: endsAt {a['endsAt']} already past while firing")

    samples, _, _ = kt.scrape(kurl + "/metrics")
    sent = {l.get("alertmanager"): v for l, v in kt.by_name(samples, "prometheus_notifications_sent_total")}
    errs = {l.get("alertmanager"): v for l, v in kt.by_name(samples, "prometheus_notifications_errors_total")}
    for u in sorted(want_active):
        f.check(sent.get(u, 0) >= 1, f"prometheus_notifications_sent_total{{alertmanager={u!r}}}: {sent.get(u)}")
        f.check(errs.get(u) == 0, f"prometheus_notifications_errors_total{{alertmanager={u!r}}}: {errs.get(u)}")
    disc = kt.by_name(samples, "prometheus_notifications_alertmanagers_discovered")
    f.check(disc and disc[0][1] == 2, f"prometheus_notifications_alertmanagers_discovered: {disc}")
    cap = kt.by_name(samples, "prometheus_notifications_queue_capacity")
    f.check(cap and cap[0][1] == 10000, f"prometheus_notifications_queue_capacity: {cap}")

    # resolution: the last firing notification was valid for 4 minutes
    # (4 x the 1m resend delay), so an alert gone within 60 s was resolved
    target.value = 0
    for name, base in (("alertmanager 1 (static)", am1), ("alertmanager 2 (file_sd, /am/)", am2)):
        left = wait_until(lambda: not am_alerts(base), 60)
        f.check(left, f"{name}: {ALERT} still active 60 s after the condition cleared: {am_alerts(base)!r}")

    if f.items:
        print("kelvin log (tail):\n" + tail(klog))
except Stop:
    pass
except Exception as e:  # noqa: BLE001 - an exception must fail the test, not vanish in finish()
    traceback.print_exc()
    f.check(False, f"unexpected error: {e!r}")
finally:
    try:
        kt.stop_all()
        if target is not None:
            target.stop()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        f.finish("alertmanager_notify")
