#!/usr/bin/python3
"""Remote write through receiver outages: nothing lost, nothing duplicated.

The sender (`kelvin server`, or Prometheus 2.42 with --sender=prometheus)
scrapes `kelvin sim fleet` (--nodes, default 1: ~1,000 series) every second
with external label edge="e1" and remote-writes to the real VictoriaMetrics
1.79 (no dedup). kelvin runs with small WAL segments and frequent checkpoints
(--segment-size, --checkpoint-size: both 64KB, kelvin's minimum, by default:
~4.5 bytes a sample, so a segment every ~15 s and a checkpoint within 5 s
of each 64 KB of WAL), so several segments roll and several checkpoints
run while the receiver is away; the
test watches the WAL directory and requires that (kelvin; for Prometheus,
whose segments are at least 10 MB and whose checkpoints come with head
compaction, --storage.tsdb.min-block-duration=--prom-block (2m) is passed
and what happened is printed).

First a probe shows VictoriaMetrics keeps duplicates: the same sample pushed
twice comes back twice from /api/v1/export (else the duplicate check below
would prove nothing).

Phase 1 (--outage seconds, default 60): 15 s of normal sending, then VM is
stopped (SIGTERM) while the sender keeps scraping, then started again on the
same data dir and port. Once the queue has drained, every (series,
timestamp) the sender stored in (T0, T1] (T0 shortly after its start, T1 10 s
after VM came back; read through the sender's query API) must be in VM's raw
export exactly once with the same value (VM keeps ~12 significant digits),
with edge="e1" added, and nothing else. samples_failed_total stays 0 and
samples_retried_total grows.

Phase 2 (--kill-outage seconds, default 40): VM is stopped again; 20 s into
the outage the sender is killed with SIGKILL and restarted on the same data
dir 3 s later; it keeps scraping for the rest of the outage; VM comes back.
Again every sample the restarted sender holds in (T2, T3] must reach VM
exactly once.

Prometheus 2.42 as the sender is expected to fail phase 2 (its WAL watcher
starts at the restart and skips older samples); the failure is the
comparison, not a test bug. Takes about --outage + --kill-outage + 2 min.
Every loop is bounded; every process is stopped, also on failure.
"""
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import kelvintest as kt  # noqa: E402
import remote_write as rw  # noqa: E402
import rw_stack as st  # noqa: E402

ARGV = sys.argv[1:]
KIND = st.sender_kind(ARGV)
OUTAGE = st.arg_value(ARGV, "outage", 60)
KILL_OUTAGE = st.arg_value(ARGV, "kill-outage", 40)
NODES = st.arg_value(ARGV, "nodes", 1)
SEGMENT = st.arg_value(ARGV, "segment-size", "64KB")
CHECKPOINT = st.arg_value(ARGV, "checkpoint-size", "64KB")
PROM_BLOCK = st.arg_value(ARGV, "prom-block", "2m")
EXTERNAL = {"edge": "e1"}
fail = kt.Failures()


def write_config(work, sd, vm):
    path = os.path.join(work, "sender.yml")
    with open(path, "w") as fh:
        fh.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\n"
                 "  external_labels:\n    edge: e1\n"
                 "scrape_configs:\n  - job_name: fleet\n"
                 f"    file_sd_configs:\n      - files: ['{sd}']\n"
                 "remote_write:\n"
                 f"  - url: {vm.write_url}\n    name: vm\n    remote_timeout: 10s\n"
                 "    queue_config:\n      batch_send_deadline: 1s\n      min_backoff: 100ms\n"
                 "      max_backoff: 2s\n      max_samples_per_send: 2000\n")
    return path


def probe_duplicates(vm):
    """VM must show a sample sent twice twice, or the duplicate check is void."""
    ts = int((time.time() - 3600) * 1000)
    series = [((("__name__", "rw_dup_probe"), ("probe", "1")), [(ts, 42.0)])]
    for _ in range(2):
        status, b = rw.push(vm.write_url, series)
        if status // 100 != 2:
            raise AssertionError(f"VM refused the probe: {status} {b[:200]!r}")
    got = vm.export(ts - 1, ts)
    n = len(got.get((("__name__", "rw_dup_probe"), ("probe", "1")), []))
    if n != 2:
        raise AssertionError(f"VM's export shows a sample sent twice {n} time(s), not 2: "
                             "it would hide duplicates")


class WalWatch:
    """What the sender's WAL directory held over time: segments and checkpoints seen."""

    def __init__(self, sender):
        self.sender = sender
        self.segs, self.ckpts = set(), set()

    def poll(self):
        s, c = self.sender.wal_files()
        self.segs.update(s)
        self.ckpts.update(c)

    def since(self, segs0, ckpts0):
        return sorted(self.segs - segs0), sorted(self.ckpts - ckpts0)


def sleep_watching(secs, watch, sender=None):
    end = time.time() + secs
    while time.time() < end:
        watch.poll()
        if sender is not None and not sender.running():
            raise AssertionError(f"the sender exited during the outage; log:\n{st.tail(sender.log)}")
        time.sleep(min(1.0, max(0.0, end - time.time())))


def wait_drained(sender, vm, t1, deadline):
    """Until the sender says it has sent past t1 and VM has what it stored."""
    def sent_past():
        ms = sender.metrics("prometheus_remote_storage")
        hi = rw.metric_sum(ms, "prometheus_remote_storage_queue_highest_sent_timestamp_seconds", remote_name="vm")
        pend = rw.metric_sum(ms, "prometheus_remote_storage_samples_pending", remote_name="vm")
        return (hi is not None and hi * 1000 >= t1 and not pend) or None
    t = time.time()
    kt.wait_until("the queue to send past T1", sent_past, deadline, 2.0)
    return time.time() - t


def compare_window(sender, vm, t0, t1, what, ref_ms, events):
    stored = sender.stored(t0, t1)
    want = {}
    for k, s in stored.items():
        want[st.add_external(k, EXTERNAL)] = s
    n = st.count_samples(want)

    def enough():
        got = vm.export(t0, t1)
        return got if st.count_samples(got) >= n else None
    try:
        got = kt.wait_until(f"VM to hold {n} samples ({what})", enough, 60, 3.0)
    except AssertionError as e:
        fail.check(False, str(e))
        got = vm.export(t0, t1)
    c = st.compare(want, got, st.equal_vm, f"{what}: VictoriaMetrics", fail)
    print(f"  {what}: {c['series']} series, {c['samples']} samples stored in the window; at VM: "
          f"{st.count_samples(got)} (missing {c['missing']}, duplicated {c['dup']}, extra {c['extra']}, "
          f"other values {c['value']})", flush=True)
    for kind in ("missing", "dup", "extra"):
        lo, hi = c["spans"][kind]
        if lo is not None:
            print(f"  {what}: {kind} samples from {(lo - ref_ms) / 1000:.1f}s to {(hi - ref_ms) / 1000:.1f}s "
                  f"after the outage began ({events})", flush=True)
    return c


def counters(sender):
    ms = sender.metrics("prometheus_remote_storage")
    return {k: rw.metric_sum(ms, "prometheus_remote_storage_" + k, remote_name="vm")
            for k in ("samples_total", "samples_failed_total", "samples_retried_total", "samples_dropped_total")}


def main():
    work = tempfile.mkdtemp(prefix="kelvin-rw-outage-")
    try:
        if KIND == "kelvin" and not st.kelvin_has_sender():
            raise AssertionError(f"{kt.KELVIN} server has no remote-write sender yet "
                                 "(no --storage.remote.flush-deadline in its --help)")
        print(f"remote_write_outage: sender {KIND}, outages {OUTAGE}s and {KILL_OUTAGE}s (kill -9), "
              f"fleet of {NODES}", flush=True)
        _, sd = st.start_fleet(work, NODES)
        vm = st.VictoriaMetrics(work).start()
        probe_duplicates(vm)
        flags = st.wal_flags(KIND, SEGMENT, CHECKPOINT, PROM_BLOCK)
        sender = st.Sender(KIND, work, write_config(work, sd, vm), flags)
        sender.start()
        watch = WalWatch(sender)
        t0 = int((time.time() + 8) * 1000)

        # ---- phase 1: an outage -------------------------------------------------------
        sleep_watching(t0 / 1000 + 15 - time.time(), watch, sender)
        c_before = counters(sender)
        segs0, ckpts0 = set(watch.segs), set(watch.ckpts)
        out1 = int(time.time() * 1000)
        vm.stop()
        print(f"  phase 1: VM stopped for {OUTAGE}s", flush=True)
        sleep_watching(OUTAGE, watch, sender)
        new_segs, new_ckpts = watch.since(segs0, ckpts0)
        print(f"  phase 1: during the outage {len(new_segs)} new WAL segments, checkpoints {new_ckpts}; "
              f"wal/ now {sender.wal_files()}", flush=True)
        if KIND == "kelvin":
            fail.check(len(new_segs) >= 3 and len(new_ckpts) >= 2,
                       f"phase 1: the outage saw {len(new_segs)} segments and {len(new_ckpts)} checkpoints; "
                       "want >= 3 and >= 2 (lower --segment-size/--checkpoint-size)")
        vm.start()
        t1 = int((time.time() + 10) * 1000)
        time.sleep(11)
        took = wait_drained(sender, vm, t1, 240)
        print(f"  phase 1: drained {took:.0f}s after T1", flush=True)
        c_after = counters(sender)
        compare_window(sender, vm, t0, t1, "phase 1", out1, f"VM back at {OUTAGE}s")
        fail.check(c_after["samples_failed_total"] == 0, f"phase 1: counters {c_after}")
        fail.check((c_after["samples_retried_total"] or 0) > (c_before["samples_retried_total"] or 0),
                   f"phase 1: nothing retried during the outage: {c_before} -> {c_after}")
        print(f"  phase 1: counters {c_after}", flush=True)

        # ---- phase 2: an outage with kill -9 ----------------------------------------------
        t2 = int(time.time() * 1000)
        vm.stop()
        kill_after = min(20, KILL_OUTAGE // 2)
        print(f"  phase 2: VM stopped for {KILL_OUTAGE}s; kill -9 of the sender after {kill_after}s", flush=True)
        segs0, ckpts0 = set(watch.segs), set(watch.ckpts)
        out_start = time.time()
        sleep_watching(kill_after, watch, sender)
        kill_at = time.time() - out_start
        sender.kill9()
        time.sleep(3)
        sender.start()
        back_at = time.time() - out_start
        sleep_watching(max(0.0, out_start + KILL_OUTAGE - time.time()), watch, sender)
        new_segs, new_ckpts = watch.since(segs0, ckpts0)
        print(f"  phase 2: during the outage {len(new_segs)} new WAL segments, checkpoints {new_ckpts}", flush=True)
        if KIND == "kelvin":
            pos = os.path.join(sender.data, "remote-write")
            print(f"  phase 2: position files {sorted(os.listdir(pos)) if os.path.isdir(pos) else 'none'}")
        vm.start()
        t3 = int((time.time() + 10) * 1000)
        time.sleep(11)
        try:
            took = wait_drained(sender, vm, t3, 240)
            print(f"  phase 2: drained {took:.0f}s after T3", flush=True)
        except AssertionError as e:
            fail.check(False, f"phase 2: {e}")
        compare_window(sender, vm, t2, t3, "phase 2", int(out_start * 1000),
                       f"kill -9 at {kill_at:.1f}s, sender back at {back_at:.1f}s, VM back at {KILL_OUTAGE}s")
        c_end = counters(sender)
        fail.check(c_end["samples_failed_total"] == 0, f"phase 2: counters {c_end}")
        print(f"  phase 2: counters after the restart {c_end}", flush=True)
        rc = sender.stop()
        fail.check(rc == 0, f"the sender exited with {rc}; log:\n{st.tail(sender.log)}")
    finally:
        st.finish(fail, work, "remote_write_outage", KIND)


if __name__ == "__main__":
    main()
