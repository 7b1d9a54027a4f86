#!/usr/bin/python3
"""Kelvin's push endpoint against the real Prometheus Pushgateway.

The same pushes -- good and bad, raw and through prometheus_client's
push_to_gateway / pushadd_to_gateway / delete_from_gateway -- go to
$KELVIN_PEERS/bin/prometheus-pushgateway and to `kelvin agent`; after
each step the status codes must be equal, and at checkpoints the pushed
series both serve must be equal: names, label sets, values (push times
compared as "set or not"), TYPE of every family and HELP where the
Pushgateway's own choice is deterministic.

Where Kelvin deliberately differs, the case is left out here and tested in
tests/unit/agent/push.c and tests/integration/push_client.py instead:
metric names the agent serves itself (refused), protobuf bodies (415
instead of a parse error), OpenMetrics bodies (parsed as OpenMetrics), an
`le` grouping label on a histogram (refused; the Pushgateway serves two
`le` labels), and invalid UTF-8 in grouping values (refused up front; the
Pushgateway stores the group and then fails every later push).
"""
import math
import os
import sys
import time
import traceback

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import kelvintest as kt  # noqa: E402

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, Summary  # noqa: E402
from prometheus_client import delete_from_gateway, push_to_gateway, pushadd_to_gateway  # noqa: E402

OWN = ("go_", "process_", "pushgateway_", "promhttp_", "DCGM_", "node_", "kelvin_")
PUSH_TIMES = ("push_time_seconds", "push_failure_time_seconds")
NONDETERMINISTIC_HELP = {"loss"}  # pushed with two different HELPs; the Pushgateway picks one at random

TEXT = "text/plain; version=0.0.4; charset=utf-8"

# (method, path, body); None as body sends none. Run in order on both.
STEPS = [
    ("PUT", "/metrics/job/train/instance/n1", "# HELP loss Training loss.\n# TYPE loss gauge\nloss{a=\"1\"} 0.5\n"),
    ("PUT", "/metrics/job/train", "# TYPE loss gauge\nloss{job=\"x\",instance=\"y\"} 0.7\n"),
    ("POST", "/metrics/job/train/instance/n1", "# TYPE step counter\nstep_total 3\n"),
    ("POST", "/metrics/job/train/instance/n1", "loss 1 1234\n"),
    ("POST", "/metrics/job/train2", "# TYPE loss counter\nloss 1\n"),
    ("PUT", "/metrics/job/train3", "# HELP loss other help\n# TYPE loss gauge\nloss 1\n"),
    "checkpoint",
    ("PUT", "/metrics/job/a/b", "x 1\n"),
    ("PUT", "/metrics/job/a/__b/c", "x 1\n"),
    ("PUT", "/metrics/job/a/b/c/", "x 1\n"),
    ("PUT", "/metrics/job@base64/dHJhaW4vMQ", "x 1\n"),
    ("PUT", "/metrics/job/j/path@base64/L3Zhci90bXA=", "x 1\n"),
    ("PUT", "/metrics/job/j/path@base64/===", "x 1\n"),
    ("PUT", "/metrics/job/j/path@base64/!!", "x 1\n"),
    ("PUT", "/metrics/job@base64/!!", "x 1\n"),
    ("PUT", "/metrics/job/j/e@base64/", "x 1\n"),
    ("PUT", "/metrics/job/j/e/", "x 1\n"),
    ("PUT", "/metrics/job/j/", "y 1\n"),
    ("PUT", "/metrics/job/j4", "garbage here\n"),
    ("GET", "/metrics/job/j", None),
    ("PUT", "/metrics/jobs/x", "x 1\n"),
    "checkpoint",
    ("DELETE", "/metrics/job/train", None),
    ("DELETE", "/metrics/job/nonexistent", None),
    ("DELETE", "/metrics/job/train/a/b/c", None),
    ("PUT", "/metrics/job/h1", "# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 2\nh_sum 3\nh_count 2\n"),
    ("PUT", "/metrics/job/h2", "h_count 5\n"),
    ("PUT", "/metrics/job/h3", "# TYPE h_count gauge\nh_count 5\n"),
    ("PUT", "/metrics/job/d1", "a 1\na 2\n"),
    ("PUT", "/metrics/job/d2", "a{x=\"1\"} 1\na{x=\"1\"} 2\n"),
    ("PUT", "/metrics/job/e1", ""),
    ("PUT", "/metrics/job/s1", "# TYPE s summary\ns{quantile=\"0.5\"} 1\ns_sum 3\ns_count 2\n"),
    ("PUT", "/metrics/job/s2", "# TYPE s2 summary\ns2{quantile=\"0.5\",q=\"1\"} 1\n"),
    ("PUT", "/metrics/job/sq/quantile/5", "# TYPE sq summary\nsq{quantile=\"0.5\"} 1\n"),
    ("PUT", "/metrics/job/ty", "x 1\n# TYPE x gauge\n"),
    "checkpoint",
    ("PUT", "/metrics/job/ev", "ev{x=\"\"} 1\n"),
    ("PUT", "/metrics/job/hb", "# TYPE hb histogram\nhb 5\n"),
    ("PUT", "/metrics/job/cnt", "# TYPE cnt counter\ncnt -5\ncnt{a=\"b\"} NaN\n"),
    ("PUT", "/metrics/job/hh", "# TYPE hh histogram\nhh_bucket{le=\"0.5\"} 1\nhh_bucket{le=\"+Inf\"} 3\n"
                               "hh_count 2\nhh_sum 1e6\nhh_count{x=\"y\"} 1000000\n"),
    ("PUT", "/metrics/job/big", "big 1000000\nbig2 1e21\nbig3 -0\nbig4 +Inf\nbig5 1.5e-7\n"),
    ("PUT", "/metrics/job/lbl", "lbl{b=\"2\",a=\"1\"} 1\nlbl{a=\"0\",c=\"x\"} 2\nlbl 3\n"),
    ("PUT", "/metrics/job/lbl/instance/i2", "lbl{b=\"2\",a=\"1\"} 4\n"),
    ("PUT", "/metrics/job/dup/a/1", "dupx 1\n"),
    ("PUT", "/metrics/job/dup", "dupx{a=\"1\"} 1\n"),
    ("PUT", "/metrics/job/esc", "# HELP esc a \\\\ b \\n c\nesc{v=\"q\\\"x\\\\y\\nz\"} 1\n"),
    ("POST", "/metrics/job/tsfail", "a 1\n"),
    ("POST", "/metrics/job/tsfail", "a 1 100\n"),
    ("PUT", "/metrics/job/post/instance/p", "p1 1\np2 2\n"),
    ("POST", "/metrics/job/post/instance/p", "p2 3\np3 4\n"),
    ("PUT", "/metrics/job/push_time", "push_time_seconds 1\nok 1\n"),
    "checkpoint",
]


def norm_value(name, v):
    if name in PUSH_TIMES or name.endswith("_created"):  # times of each side's own clock
        return "set" if v != 0 else "0"
    if math.isnan(v):
        return "NaN"
    return repr(float(v) + 0.0)  # -0 == 0


def pushed_series(url):
    samples, types, helps = kt.scrape(url + "/metrics")
    out = set()
    fams = set()
    for (n, l, v) in samples:
        if n.startswith(OWN):
            continue
        if "job" not in l and n not in PUSH_TIMES:
            continue
        out.add((n, tuple(sorted(l.items())), norm_value(n, v)))
    for n, t in types.items():
        if not n.startswith(OWN) and any(s[0] == n or s[0].startswith(n + "_") for s in out):
            fams.add((n, t, helps.get(n) if n not in NONDETERMINISTIC_HELP else "*"))
    return out, fams


def compare(f, where, pg, kv, deadline=8):
    """The agent serves pushes from its next snapshot: poll it (bounded)."""
    want_s, want_f = pushed_series(pg)
    end = time.time() + deadline
    while True:
        got_s, got_f = pushed_series(kv)
        if (got_s, got_f) == (want_s, want_f) or time.time() > end:
            break
        time.sleep(0.25)
    if not f.check(got_s == want_s, f"{where}: series differ"):
        for x in sorted(want_s - got_s)[:15]:
            print(f"  only in the Pushgateway: {x}")
        for x in sorted(got_s - want_s)[:15]:
            print(f"  only in Kelvin:          {x}")
    if not f.check(got_f == want_f, f"{where}: families (TYPE/HELP) differ"):
        for x in sorted(want_f - got_f)[:15]:
            print(f"  only in the Pushgateway: {x}")
        for x in sorted(got_f - want_f)[:15]:
            print(f"  only in Kelvin:          {x}")


def client_pushes(gw):
    """prometheus_client's three calls; returns what each raised (or None)."""
    results = []
    reg = CollectorRegistry()
    Gauge("c_loss", "Loss.", registry=reg).set(0.25)
    Counter("c_steps", "Steps.", registry=reg).inc(42)
    h = Histogram("c_step_seconds", "Step time.", buckets=(0.1, 0.5, 1.0), registry=reg)
    h.observe(0.3)
    h.observe(0.7)
    Summary("c_tokens", "Tokens.", registry=reg).observe(512)

    def call(fn, *a, **kw):
        try:
            fn(*a, **kw)
            results.append(None)
        except Exception as e:  # noqa: BLE001 - urllib raises for non-2xx
            results.append(str(e))

    call(push_to_gateway, gw, job="client", registry=reg, grouping_key={"instance": "n1", "rank": "0"})
    reg2 = CollectorRegistry()
    Gauge("c_tps", "Throughput.", registry=reg2).set(1234)
    call(pushadd_to_gateway, gw, job="client", registry=reg2, grouping_key={"instance": "n1", "rank": "0"})
    reg3 = CollectorRegistry()
    Gauge("c_loss", "Loss.", registry=reg3).set(0.9)
    call(push_to_gateway, gw, job="client/b", registry=reg3, grouping_key={"path": "/data/x", "empty": ""})
    call(push_to_gateway, gw, job="client2", registry=reg3)
    call(delete_from_gateway, gw, job="client2")
    bad = CollectorRegistry()
    Counter("c_loss", "Not a gauge.", registry=bad).inc()
    call(push_to_gateway, gw, job="client3", registry=bad)
    return results


f = kt.Failures()
try:
    pg_bin = os.path.join(kt.PEERS, "bin", "prometheus-pushgateway")
    if not os.access(pg_bin, os.X_OK):
        print(f"pushgateway: {pg_bin} is missing (run scripts/peers)")
        sys.exit(1)
    pg_port = kt.free_port()
    pg = f"http://127.0.0.1:{pg_port}"
    kt.start([pg_bin, f"--web.listen-address=127.0.0.1:{pg_port}", "--persistence.file="])
    kt.wait_http(pg + "/-/ready")
    _, kv = kt.start_agent("--gpu.simulate=healthy", "--gpu.simulate.count=1")

    n = 0
    for step in STEPS:
        if step == "checkpoint":
            n += 1
            compare(f, f"checkpoint {n}", pg, kv)
            continue
        method, path, body = step
        data = body.encode() if body is not None else None
        hdr = {"Content-Type": TEXT} if data is not None else {}
        s1, _, b1 = kt.http(pg + path, method=method, data=data, headers=hdr)
        s2, _, b2 = kt.http(kv + path, method=method, data=data, headers=hdr)
        f.check(s1 == s2, f"{method} {path} {body!r}: Pushgateway {s1} ({b1[:120]!r}), Kelvin {s2} ({b2[:120]!r})")

    r1 = client_pushes(pg[len("http://"):])
    r2 = client_pushes(kv[len("http://"):])
    for i, (a, b) in enumerate(zip(r1, r2)):
        f.check((a is None) == (b is None) and (a or "")[:15] == (b or "")[:15],
                f"client call {i}: Pushgateway {a!r}, Kelvin {b!r}")
    compare(f, "after prometheus_client pushes", pg, kv)
except Exception as e:  # noqa: BLE001 - an exception must fail the test, not vanish in finish()
    traceback.print_exc()
    f.check(False, f"unexpected error: {e!r}")
finally:
    f.finish("pushgateway")
