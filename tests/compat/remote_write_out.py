#!/usr/bin/python3
"""Remote write out: every sample `kelvin server` stored arrives at the real
VictoriaMetrics 1.79 and the real Prometheus 2.42 (--web.enable-remote-write-
receiver), same labels (external labels added, write_relabel_configs
applied), same timestamps, same values, each exactly once.

Setup, all on 127.0.0.1: a fixture target (tests/lib/fixture_targets.py)
whose body changes every scrape (an increasing counter, arbitrary doubles,
NaN, +Inf, -Inf, -0, the smallest subnormal, a series that carries its own
`cluster` label, a metric write_relabel_configs drops, a series that
vanishes half-way) and `kelvin sim fleet` (--nodes, default 1: ~1,000
realistic GPU-node series), both scraped every second. The sender writes to
three queues with the same write_relabel_configs (drop fx_drop_me; copy
`node` to `host` and drop `node`; mark series whose external `replica` label
is "a", which shows relabeling runs after external labels are added, as
2.42's processExternalLabels + relabel.Process do):
  vm    -> VictoriaMetrics /api/v1/write (no dedup, -search.latencyOffset=0)
  prom  -> Prometheus 2.42 receiver /api/v1/write
  py    -> tests/lib/remote_write.Receiver (decodes every request: exact bits,
           stale markers, duplicates, headers)
After a window (T0, T1] of --seconds (40) the sender's own store is read
through its query API ({__name__=~".+"}[range] at T1) and, once the queues
have drained, compared with each receiver:
  - py: bit-exact values (any NaN equals any NaN: the query API does not keep
    NaN payloads), each (series, ts) delivered exactly once, plus exactly one
    stale marker (0x7ff0000000000002) for the vanished series at the first
    scrape of its target after its last sample, and no other stale marker;
    Content-Encoding snappy, Content-Type application/x-protobuf,
    X-Prometheus-Remote-Write-Version 0.1.0, a User-Agent, the configured
    header (kelvin only: Debian's build of 2.42, 2.42.0+ds, does not send
    `headers`, upstream 2.42 does; the test prints what it got); labels
    sorted and unique in every series. -0 may arrive as +0 (2.42's
    protobuf leaves out a double equal to 0).
  - VictoriaMetrics (/api/v1/export, raw, duplicates shown): VM keeps a value
    as a decimal of ~12 significant digits (so values are compared to 1e-11
    relative, -0 reads 0, subnormals 0), drops ordinary NaN at ingest (so
    the NaN series is expected absent) and keeps stale markers (they come back
    as null): the marker is expected at the same timestamp.
  - Prometheus (query API, stale markers hidden): bit-exact; the marker is
    checked by instant queries just before it (last value) and at it (empty).
  - the sender's metrics: prometheus_remote_storage_samples_failed_total 0
    per queue, samples_dropped_total counts the dropped metric, the lag
    (highest_timestamp_in_seconds - queue_highest_sent_timestamp_seconds)
    is under 10 s after the drain.

--sender=prometheus runs the same against $KELVIN_PEERS/bin/prometheus as the
sender (proves the checks are 2.42's behaviour). Other options: --seconds=N,
--nodes=N. Every loop is bounded; every process is stopped, failure included.
"""
import math
import os
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import fixture_targets as ft  # noqa: E402
import kelvintest as kt  # noqa: E402
import remote_write as rw  # noqa: E402
import rw_stack as st  # noqa: E402

KIND = st.sender_kind(sys.argv[1:])
SECONDS = st.arg_value(sys.argv[1:], "seconds", 40)
NODES = st.arg_value(sys.argv[1:], "nodes", 1)
EXTERNAL = {"cluster": "edge-1", "replica": "a"}
fail = kt.Failures()

RELABEL = """    write_relabel_configs:
      - source_labels: [__name__]
        regex: fx_drop_me
        action: drop
      - source_labels: [node]
        regex: (.+)
        target_label: host
      - regex: node
        action: labeldrop
      - source_labels: [replica]
        regex: a
        target_label: replica_seen
        replacement: "yes"
"""


def relabel(labels):
    """What RELABEL does to a series that already has its external labels."""
    d = dict(labels)
    if d.get("__name__") == "fx_drop_me":
        return None
    if d.get("node"):
        d["host"] = d["node"]
    d.pop("node", None)
    if d.get("replica") == "a":
        d["replica_seen"] = "yes"
    return tuple(sorted(d.items()))


class Body:
    """The fixture target's body: changes every scrape; fx_vanish goes away
    once `vanish` is set."""

    def __init__(self):
        self.vanish = threading.Event()

    def __call__(self, n):
        lines = [
            "# TYPE fx_requests_total counter",
            f'fx_requests_total{{node="gpu-a",path="/x"}} {n * 1.5}',
            f'fx_gauge{{node="gpu-b",kind="float"}} {math.sin(n) * 1234.567891234567!r}',
            f'fx_gauge{{cluster="own",kind="own_cluster"}} {n}',
            'fx_special{v="nan"} NaN',
            'fx_special{v="inf"} +Inf',
            'fx_special{v="minf"} -Inf',
            'fx_special{v="negzero"} -0',
            'fx_special{v="subnormal"} 5e-324',
            f'fx_special{{v="big"}} {1.7976931348623157e308 / (1 + n % 3)!r}',
            f'fx_special{{v="tiny"}} {1e-300 * (1 + n % 5)!r}',
            f"fx_drop_me {n}",
        ]
        if not self.vanish.is_set():
            lines.append(f'fx_vanish{{node="gpu-c"}} {n}')
        return "\n".join(lines) + "\n"


def write_config(work, fx_addr, sd, vm, pr, py):
    path = os.path.join(work, "sender.yml")
    queue = ("    queue_config:\n      batch_send_deadline: 1s\n      min_backoff: 50ms\n"
             "      max_backoff: 1s\n      max_samples_per_send: 2000\n")
    with open(path, "w") as fh:
        fh.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\n"
                 "  external_labels:\n" + "".join(f"    {k}: {v}\n" for k, v in EXTERNAL.items()) +
                 "scrape_configs:\n"
                 "  - job_name: fx\n    metrics_path: /fx\n"
                 f"    static_configs:\n      - targets: ['{fx_addr}']\n"
                 "  - job_name: fleet\n"
                 f"    file_sd_configs:\n      - files: ['{sd}']\n"
                 "remote_write:\n"
                 f"  - url: {vm.write_url}\n    name: vm\n" + RELABEL + queue +
                 f"  - url: {pr.write_url}\n    name: prom\n" + RELABEL + queue +
                 f"  - url: {py.url}/receive\n    name: py\n    headers:\n      X-Scope-OrgID: tenant-1\n" +
                 RELABEL + queue)
    return path


def expected_for(stored):
    out = {}
    for k, s in stored.items():
        nk = relabel(st.add_external(k, EXTERNAL))
        if nk is not None:
            out.setdefault(nk, []).extend(s)
    return out


def py_in_range(recv, t0, t1):
    """The py receiver's deliveries in (t0, t1]: (normal, stale markers)."""
    normal, stale = {}, {}
    for k, d in recv.snapshot().items():
        for t, vs in d.items():
            if t0 < t <= t1:
                for v in vs:
                    (stale if rw.is_stale(v) else normal).setdefault(k, []).append((t, v))
    return normal, stale


def main():
    work = tempfile.mkdtemp(prefix="kelvin-rw-out-")
    fx = ft.FixtureServer()
    body = Body()
    fx.add(ft.Target("fx", body))
    fx.start()
    py = rw.Receiver().start()
    try:
        if KIND == "kelvin" and not st.kelvin_has_sender():
            raise AssertionError(f"{kt.KELVIN} server has no remote-write sender yet "
                                 "(no --storage.remote.flush-deadline in its --help)")
        _, sd = st.start_fleet(work, NODES)
        vm = st.VictoriaMetrics(work).start()
        pr = st.PromReceiver(work).start()
        cfg = write_config(work, fx.address, sd, vm, pr, py)
        sender = st.Sender(KIND, work, cfg)
        sender.start()
        t0 = int((time.time() + 8) * 1000)
        t1 = t0 + SECONDS * 1000
        tv = (t0 + t1) // 2
        print(f"remote_write_out: sender {KIND}, window {SECONDS}s, fleet of {NODES}", flush=True)
        time.sleep(max(0.0, tv / 1000 - time.time()))
        body.vanish.set()
        time.sleep(max(0.0, t1 / 1000 + 3 - time.time()))

        stored = sender.stored(t0, t1)
        n_stored = st.count_samples(stored)
        fail.check(n_stored >= SECONDS * 10, f"the sender stored only {n_stored} samples in the window")
        vanish_key = ("__name__", "fx_vanish")
        van = [(k, s) for k, s in stored.items() if vanish_key in k]
        ups = [s for k, s in stored.items() if ("__name__", "up") in k and ("job", "fx") in k]
        if not van or not ups:
            raise AssertionError(f"the sender stored no fx_vanish ({len(van)}) or up{{job=fx}} ({len(ups)})")
        last_vanish = max(t for t, _ in van[0][1])
        later = [t for t, _ in ups[0] if t > last_vanish]
        if not later:
            raise AssertionError("no scrape of fx after fx_vanish went away")
        marker_ts = min(later)
        want = expected_for(stored)
        marker_key = relabel(st.add_external(van[0][0], EXTERNAL))
        n_drop = sum(len(s) for k, s in stored.items() if ("__name__", "fx_drop_me") in k)
        fail.check(n_drop >= SECONDS // 2, f"fx_drop_me: only {n_drop} samples stored")

        # VM: ordinary NaN dropped at ingest, the stale marker kept (null)
        want_vm = {}
        for k, s in want.items():
            s2 = [(t, v) for t, v in s if not math.isnan(v)]
            if s2:
                want_vm[k] = s2
        want_vm.setdefault(marker_key, []).append((marker_ts, rw.stale_nan()))
        n_want = st.count_samples(want)

        def drained():
            normal, stale = py_in_range(py, t0, t1)
            have_py = st.count_samples(normal) >= n_want and stale
            have_vm = st.count_samples(vm.export(t0, t1)) >= st.count_samples(want_vm)
            have_pr = st.count_samples(pr.stored(t0, t1)) >= n_want
            return (have_py and have_vm and have_pr) or None
        try:
            kt.wait_until("the three queues to deliver the window", drained, 90, 1.0)
        except AssertionError as e:
            fail.check(False, str(e))

        # (py) exact bits, exactly once, headers
        normal, stale = py_in_range(py, t0, t1)
        c = st.compare(want, normal, st.equal_exact, "py receiver", fail)
        fail.check(stale == {marker_key: [(marker_ts, stale.get(marker_key, [(0, 0)])[0][1])]} and
                   rw.is_stale(stale[marker_key][0][1]),
                   f"py receiver: stale markers {sorted((dict(k), v) for k, v in stale.items())[:5]}, "
                   f"want one for fx_vanish at {marker_ts}")
        after = [t for t in py.snapshot().get(marker_key, {}) if t > marker_ts]
        fail.check(not after, f"py receiver: fx_vanish samples after its stale marker: {after[:5]}")
        reqs = [r for r in py.requests if r.wr]
        fail.check(reqs and not py.errors, f"py receiver: {len(reqs)} requests decoded, errors {py.errors[:3]}")
        for r in reqs[:50]:
            h = r.headers
            ok = (h.get("content-encoding") == "snappy" and h.get("content-type") == "application/x-protobuf" and
                  h.get("x-prometheus-remote-write-version") == "0.1.0" and h.get("user-agent") and
                  (h.get("x-scope-orgid") == "tenant-1" or KIND == "prometheus") and r.path == "/receive")
            if not fail.check(ok, f"py receiver: request {r.n} headers {h} path {r.path}"):
                break
        bad = [lb for r in reqs for lb, _ in r.wr["series"] if not rw.labels_sorted_unique(lb)]
        fail.check(not bad, f"py receiver: labels not sorted/unique: {bad[:3]}")
        if reqs:
            print(f"  User-Agent: {reqs[0].headers.get('user-agent')}; configured header X-Scope-OrgID: "
                  f"{reqs[0].headers.get('x-scope-orgid')}")
        print(f"  py: {c['series']} series, {c['samples']} samples compared; {len(py.requests)} requests")

        # (VM) raw export
        got_vm = vm.export(t0, t1)
        c = st.compare(want_vm, got_vm, st.equal_stale_aware(st.equal_vm), "VictoriaMetrics", fail)
        print(f"  VictoriaMetrics: {c['series']} series, {c['samples']} samples compared")

        # (Prometheus receiver) query API; marker by instant queries
        got_pr = pr.stored(t0, t1)
        c = st.compare(want, got_pr, st.equal_exact, "Prometheus receiver", fail)
        print(f"  Prometheus receiver: {c['series']} series, {c['samples']} samples compared")
        sel = "fx_vanish{" + ",".join(f'{k}="{v}"' for k, v in marker_key if k != "__name__") + "}"
        for name, srv in (("Prometheus receiver", pr), ("sender", sender)):
            q = sel if srv is pr else 'fx_vanish{node="gpu-c"}'
            before = kt.http(f"{srv.url}/api/v1/query?query={urlq(q)}&time={(marker_ts - 1) / 1000:.3f}")[2]
            at = kt.http(f"{srv.url}/api/v1/query?query={urlq(q)}&time={marker_ts / 1000:.3f}")[2]
            fail.check(b'"result":[]' not in before and b'"result":[]' in at,
                       f"{name}: {q} just before the marker {before[:200]!r}, at it {at[:200]!r} "
                       "(want a value, then none: the stale marker)")

        # the sender's own metrics
        ms = sender.metrics("prometheus_remote_storage")
        names = sorted({n for n, _ in ms})
        print("  sender's remote-storage metrics: " + ", ".join(names))
        for q in ("vm", "prom", "py"):
            failed = st_metric(ms, "prometheus_remote_storage_samples_failed_total", q)
            fail.check(failed == 0, f"queue {q}: samples_failed_total {failed}")
            dropped = st_metric(ms, "prometheus_remote_storage_samples_dropped_total", q)
            fail.check(dropped is not None and dropped >= n_drop,
                       f"queue {q}: samples_dropped_total {dropped}, fx_drop_me had {n_drop} in the window")
            sent = st_metric(ms, "prometheus_remote_storage_samples_total", q)
            fail.check(sent is not None and sent >= n_want, f"queue {q}: samples_total {sent} < {n_want}")
            hi = st_metric(ms, "prometheus_remote_storage_queue_highest_sent_timestamp_seconds", q)
            top = rw.metric_sum(ms, "prometheus_remote_storage_highest_timestamp_in_seconds")
            fail.check(hi is not None and top is not None and 0 <= top - hi < 10,
                       f"queue {q}: highest sent {hi} vs highest stored {top}")
        rc = sender.stop()
        # a sanitizer's leak or error report ends the process with non-zero
        fail.check(rc == 0, f"the sender exited with {rc}; log:\n{st.tail(sender.log)}")
    finally:
        fx.stop()
        py.stop()
        st.finish(fail, work, "remote_write_out", KIND)


def urlq(s):
    import urllib.parse
    return urllib.parse.quote(s)


def st_metric(ms, name, queue):
    """A per-queue metric: 2.42 labels queues remote_name (and url)."""
    return rw.metric_sum(ms, name, remote_name=queue)


if __name__ == "__main__":
    main()
