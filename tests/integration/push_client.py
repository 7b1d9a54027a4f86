#!/usr/bin/python3
"""Pushgateway API end to end: prometheus_client's push_to_gateway,
pushadd_to_gateway and delete_from_gateway against `kelvin agent`, checked
on the agent's /metrics.

- push_to_gateway (PUT) with a gauge, a counter, a histogram and a summary:
  every series gets job and the grouping labels, instance="" where none;
  push_time_seconds is recent, push_failure_time_seconds 0.
- pushadd_to_gateway (POST) replaces only the families it pushes;
  push_to_gateway replaces the group; delete_from_gateway removes it.
- a grouping value with '/' (the client sends it base64-encoded), and an
  empty one.
- refused pushes (timestamps, a type conflict between groups, an agent
  metric name) raise in the client, change nothing served and set
  push_failure_time_seconds.
"""
import os
import sys
import time
import traceback

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import kelvintest as kt  # noqa: E402

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, Summary  # noqa: E402
from prometheus_client import delete_from_gateway, push_to_gateway, pushadd_to_gateway  # noqa: E402


def value(samples, name, **labels):
    vals = [v for (n, l, v) in samples if n == name and l == labels]
    return vals[0] if len(vals) == 1 else None


def names(samples):
    return {n for (n, _, _) in samples}


def refused(fn, *args, **kw):
    try:
        fn(*args, **kw)
    except Exception as e:  # urllib raises for any non-2xx answer
        return str(e)
    return None


f = kt.Failures()
try:
    p, url = kt.start_agent("--gpu.simulate=healthy", "--gpu.simulate.count=1")
    gw = url[len("http://"):]
    before = time.time() - 1

    reg = CollectorRegistry()
    loss = Gauge("train_loss", "Training loss.", registry=reg)
    steps = Counter("train_steps", "Optimizer steps.", registry=reg)
    st = Histogram("train_step_seconds", "Step time.", buckets=(0.1, 0.5, 1.0), registry=reg)
    tok = Summary("train_tokens", "Tokens per batch.", registry=reg)
    loss.set(0.25)
    steps.inc(42)
    st.observe(0.3)
    st.observe(0.7)
    tok.observe(512)
    push_to_gateway(gw, job="train", registry=reg, grouping_key={"instance": "n1", "rank": "0"})

    s, types, helps = kt.scrape(url + "/metrics")
    key = {"instance": "n1", "job": "train", "rank": "0"}
    f.check(value(s, "train_loss", **key) == 0.25, f"train_loss: {value(s, 'train_loss', **key)}")
    f.check(value(s, "train_steps_total", **key) == 42.0, "train_steps_total")
    f.check(value(s, "train_step_seconds_bucket", le="0.5", **key) == 1.0, "histogram bucket 0.5")
    f.check(value(s, "train_step_seconds_bucket", le="+Inf", **key) == 2.0, "histogram +Inf")
    f.check(value(s, "train_step_seconds_count", **key) == 2.0, "histogram count")
    f.check(value(s, "train_tokens_sum", **key) == 512.0, "summary sum")
    f.check(value(s, "train_steps_created", **key) is not None, "the client's _created gauge")
    f.check(types.get("train_loss") == "gauge" and types.get("train_steps_total") == "counter" and
            types.get("train_step_seconds") == "histogram" and types.get("train_tokens") == "summary",
            f"types: {[types.get(n) for n in ('train_loss', 'train_steps_total', 'train_step_seconds')]}")
    f.check(helps.get("train_loss") == "Training loss.", f"help: {helps.get('train_loss')}")
    pt = value(s, "push_time_seconds", **key)
    f.check(pt is not None and before <= pt <= time.time() + 1, f"push_time_seconds {pt}")
    f.check(value(s, "push_failure_time_seconds", **key) == 0.0, "push_failure_time_seconds")
    f.check(value(s, "kelvin_push_groups") == 1.0, "kelvin_push_groups")

    # POST: only the pushed families are replaced
    reg2 = CollectorRegistry()
    Gauge("train_tokens_per_second", "Throughput.", registry=reg2).set(1234)
    Gauge("train_loss", "Training loss.", registry=reg2).set(0.2)
    pushadd_to_gateway(gw, job="train", registry=reg2, grouping_key={"instance": "n1", "rank": "0"})
    s, _, _ = kt.scrape(url + "/metrics")
    f.check(value(s, "train_loss", **key) == 0.2, "POST replaced train_loss")
    f.check(value(s, "train_tokens_per_second", **key) == 1234.0, "POST added a family")
    f.check(value(s, "train_steps_total", **key) == 42.0, "POST kept the other families")

    # a second group of the same job; '/' and "" in grouping values
    reg3 = CollectorRegistry()
    Gauge("train_loss", "Training loss.", registry=reg3).set(0.9)
    push_to_gateway(gw, job="train", registry=reg3, grouping_key={"instance": "n2", "rank": "1",
                                                                   "path": "/data/run 1", "empty": ""})
    s, _, _ = kt.scrape(url + "/metrics")
    key2 = {"instance": "n2", "job": "train", "rank": "1", "path": "/data/run 1", "empty": ""}
    f.check(value(s, "train_loss", **key2) == 0.9, f"base64 grouping values: {[x for x in s if x[0] == 'train_loss']}")
    f.check(value(s, "kelvin_push_groups") == 2.0, "two groups")

    # refused pushes change nothing and are timed
    bad = CollectorRegistry()
    Summary("train_loss", "Not a gauge.", registry=bad).observe(1)
    err = refused(push_to_gateway, gw, job="other", registry=bad)
    f.check(err is not None and "400" in err, f"type conflict across groups must be refused: {err}")
    bad2 = CollectorRegistry()
    Gauge("DCGM_FI_DEV_GPU_TEMP", "Shadow.", registry=bad2).set(1)
    err = refused(push_to_gateway, gw, job="other", registry=bad2)
    f.check(err is not None and "400" in err, f"an agent metric name must be refused: {err}")
    status, _, body = kt.http(url + "/metrics/job/other", method="POST", data=b"train_x 1 1700000000000\n")
    f.check(status == 400 and b"timestamps" in body, f"timestamps: {status} {body!r}")
    s, _, _ = kt.scrape(url + "/metrics")
    f.check(value(s, "train_loss", instance="", job="other") is None, "a refused push is not served")
    f.check((value(s, "push_failure_time_seconds", instance="", job="other") or 0) > before,
            "push_failure_time_seconds of the refused group")
    f.check(value(s, "push_time_seconds", instance="", job="other") == 0.0, "never pushed successfully")
    f.check(any(n == "DCGM_FI_DEV_GPU_TEMP" for (n, _, _) in s), "GPU metrics still served")
    f.check(all(l.get("job") != "other" for (n, l, v) in s if n == "DCGM_FI_DEV_GPU_TEMP"),
            "the shadowing series must not be served")

    # PUT replaces the whole group
    reg4 = CollectorRegistry()
    Gauge("train_epoch", "Epoch.", registry=reg4).set(3)
    push_to_gateway(gw, job="train", registry=reg4, grouping_key={"instance": "n1", "rank": "0"})
    s, _, _ = kt.scrape(url + "/metrics")
    f.check(value(s, "train_epoch", **key) == 3.0, "PUT's family")
    f.check(value(s, "train_steps_total", **key) is None, "PUT dropped the group's other families")
    f.check(value(s, "train_loss", **key2) == 0.9, "PUT of one group leaves the others")

    # DELETE
    delete_from_gateway(gw, job="train", grouping_key={"instance": "n1", "rank": "0"})
    s, _, _ = kt.scrape(url + "/metrics")
    f.check(value(s, "train_epoch", **key) is None, "DELETE removed the group")
    f.check(value(s, "push_time_seconds", **key) is None, "DELETE removed its push time")
    f.check(value(s, "train_loss", **key2) == 0.9, "DELETE of one group leaves the others")

    # statuses of the API
    for method, path, body, want in (
        ("PUT", "/metrics/job/x/a", b"x 1\n", 400),
        ("PUT", "/metrics/job/x/__a/b", b"x 1\n", 400),
        ("GET", "/metrics/job/x", None, 405),
        ("DELETE", "/metrics/job/nothing", None, 202),
        ("PUT", "/metrics/job/x", b"not valid exposition\n", 400),
    ):
        status, _, _ = kt.http(url + path, method=method, data=body)
        f.check(status == want, f"{method} {path}: {status}, want {want}")
    f.check("kelvin_push_requests_total" in names(kt.scrape(url + "/metrics")[0]), "request counter")
except Exception as e:  # noqa: BLE001 - an exception must fail the test, not vanish in finish()
    traceback.print_exc()
    f.check(False, f"unexpected error: {e!r}")
finally:
    f.finish("push_client")
