#!/usr/bin/python3
"""Remote write out against receivers that fail on purpose: what is retried,
what is dropped, and what the sender counts.

One sender (`kelvin server`, or Prometheus 2.42 with --sender=prometheus)
scrapes a fixture target (20 series) every second and writes to six queues,
each to its own tests/lib/remote_write.Receiver on 127.0.0.1 (it decodes
snappy + protobuf itself and answers as told). Every queue has one shard,
min_backoff 100ms, max_backoff 1s, batch_send_deadline 1s and
metadata_config.send false (so only sample requests reach the policies).
Failures are timed from T0 (the sender's start + 5 s); the window checked is
(T0, T0 + --seconds] (default 30):

  q5xx       500 for 8 s, then 204, basic_auth user/secret: every stored
             sample delivered exactly once; samples_retried_total equals the
             samples of the requests answered 500; samples_failed_total 0;
             retries back off: no two failed attempts closer than ~min_backoff,
             none further apart than max_backoff + 1.5 s; Authorization Basic.
  q400       400 for 6 s, then 204, authorization Bearer: a sample in a
             request answered 400 is never sent again (dropped);
             samples_failed_total equals their number; nothing retried; the
             queue moves on: every other stored sample delivered exactly once.
  q429retry  retry_on_http_429 true: 429 with Retry-After: 2 for 6 s: retried
             (retried_total = samples of the 429 answers), all delivered
             once, failed 0; attempts after a 429 wait the Retry-After (>= 1.8 s).
  q429drop   retry_on_http_429 false: 429 for 6 s: dropped like a 400
             (failed_total = their samples, nothing re-sent, nothing retried).
  qslow      remote_timeout 1s; the first 3 requests from T0 on are answered
             after 4 s (with 500, so a late answer delivers nothing): the
             sender gives up after ~1 s and sends the same samples again
             before that answer; retried_total counts the timed-out attempts
             (and any 500 answered to one); all delivered once.
  qslowok    remote_timeout 3s, every answer 0.5 s late: nothing retried or
             failed, all delivered once; the configured header X-Scope-OrgID
             is sent (kelvin only: Debian's 2.42.0+ds does not send
             `headers`, upstream 2.42 does; printed either way).
Every request (all queues): Content-Encoding snappy, Content-Type
application/x-protobuf, X-Prometheus-Remote-Write-Version 0.1.0, a
User-Agent, decodable, labels sorted and unique.

Counters are 2.42's names with remote_name="<queue>":
prometheus_remote_storage_samples_{total,failed_total,retried_total};
samples_total counts every attempt, failed ones included (2.42 adds a
batch's samples before each try): it must equal the samples the receiver
got over all requests.
--sender=prometheus runs the same checks with the real Prometheus 2.42 as the
sender. Every loop is bounded; every process stopped, also on failure.
"""
import base64
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
SECONDS = st.arg_value(sys.argv[1:], "seconds", 30)
fail = kt.Failures()

QUEUES = ["q5xx", "q400", "q429retry", "q429drop", "qslow", "qslowok"]


def body(n):
    return "".join(f'fx_series{{i="{i}"}} {n * 100 + i}\n' for i in range(20))


class Policies:
    """The answers of every receiver, timed from t0 (set once the sender runs)."""

    def __init__(self):
        self.t0 = None
        self.slow_left = 3

    def phase(self, secs):
        return self.t0 is not None and time.time() < self.t0 + secs

    def q5xx(self, n, req):
        return 500 if self.phase(8) else 204

    def q400(self, n, req):
        return 400 if self.phase(6) else 204

    def q429retry(self, n, req):
        return (429, 0.0, {"Retry-After": "2"}) if self.phase(6) else 204

    def q429drop(self, n, req):
        return 429 if self.phase(6) else 204

    def qslow(self, n, req):
        if self.t0 is not None and time.time() >= self.t0 and req.nsamples:
            with _slow_lock:
                if self.slow_left > 0:
                    self.slow_left -= 1
                    req.slow = True
                    return 500, 4.0
        return 204

    def qslowok(self, n, req):
        return 204, 0.5


_slow_lock = threading.Lock()


def write_config(work, fx_addr, recv):
    def q(name, extra="", timeout="5s", retry429=False):
        return (f"  - url: {recv[name].url}/write/{name}\n    name: {name}\n    remote_timeout: {timeout}\n" +
                extra +
                "    queue_config:\n      max_shards: 1\n      min_shards: 1\n      capacity: 2500\n"
                "      max_samples_per_send: 500\n      batch_send_deadline: 1s\n      min_backoff: 100ms\n"
                f"      max_backoff: 1s\n      retry_on_http_429: {'true' if retry429 else 'false'}\n"
                "    metadata_config:\n      send: false\n")
    path = os.path.join(work, "sender.yml")
    with open(path, "w") as fh:
        fh.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\n"
                 "scrape_configs:\n  - job_name: fx\n    metrics_path: /fx\n"
                 f"    static_configs:\n      - targets: ['{fx_addr}']\n"
                 "remote_write:\n" +
                 q("q5xx", "    basic_auth:\n      username: user\n      password: secret\n") +
                 q("q400", "    authorization:\n      credentials: tok-1\n") +
                 q("q429retry", retry429=True) +
                 q("q429drop", retry429=False) +
                 q("qslow", timeout="1s") +
                 q("qslowok", "    headers:\n      X-Scope-OrgID: tenant-9\n", timeout="3s"))
    return path


def keys_of(req):
    return {(lb, t) for lb, s in req.wr["series"] for t, _ in s} if req.wr else set()


def main():
    work = tempfile.mkdtemp(prefix="kelvin-rw-errors-")
    fx = ft.FixtureServer()
    fx.add(ft.Target("fx", body))
    fx.start()
    pol = Policies()
    recv = {name: rw.Receiver(getattr(pol, name)).start() for name in QUEUES}
    try:
        if KIND == "kelvin" and not st.kelvin_has_sender():
            raise AssertionError(f"{kt.KELVIN} server has no remote-write sender yet "
                                 "(no --storage.remote.flush-deadline in its --help)")
        sender = st.Sender(KIND, work, write_config(work, fx.address, recv))
        sender.start()
        pol.t0 = time.time() + 5
        t0 = int(pol.t0 * 1000)
        t1 = t0 + SECONDS * 1000
        print(f"remote_write_errors: sender {KIND}, window {SECONDS}s", flush=True)
        time.sleep(max(0.0, t1 / 1000 + 2 - time.time()))
        stored = sender.stored(t0, t1)
        want = {(k, t) for k, s in stored.items() for t, _ in s}
        fail.check(len(want) >= SECONDS * 15, f"the sender stored only {len(want)} samples in the window")

        def delivered_keys(r):
            return {(k, t) for k, d in r.snapshot().items() for t in d if t0 < t <= t1}

        def dropped_keys(r):
            out = set()
            for q in list(r.requests):
                if q.status is not None and 400 <= q.status < 500 and not (q.status == 429 and r is recv["q429retry"]):
                    out |= keys_of(q)
            return out

        def all_in():
            return all(delivered_keys(recv[n]) | dropped_keys(recv[n]) >= want for n in QUEUES) or None
        try:
            kt.wait_until("every queue to deliver or drop the window", all_in, 60, 1.0)
        except AssertionError as e:
            fail.check(False, str(e))
        time.sleep(2)  # the last answers' counters

        def received():
            return {n: sum(q.nsamples for q in list(recv[n].requests)) for n in QUEUES}
        rec0 = received()
        ms = sender.metrics("prometheus_remote_storage")
        time.sleep(1.5)
        rec1 = received()

        def m(name, q):
            return rw.metric_sum(ms, "prometheus_remote_storage_" + name, remote_name=q)

        for name in QUEUES:
            r = recv[name]
            reqs = list(r.requests)
            fail.check(not r.errors, f"{name}: undecodable requests: {r.errors[:3]}")
            for q in reqs:
                h = q.headers
                ok = (h.get("content-encoding") == "snappy" and h.get("content-type") == "application/x-protobuf" and
                      h.get("x-prometheus-remote-write-version") == "0.1.0" and h.get("user-agent") and
                      q.path == f"/write/{name}")
                if not fail.check(ok, f"{name}: request {q.n}: headers {h}, path {q.path}"):
                    break
            bad = [lb for q in reqs if q.wr for lb, _ in q.wr["series"] if not rw.labels_sorted_unique(lb)]
            fail.check(not bad, f"{name}: labels not sorted/unique: {bad[:2]}")
            nonok = [q for q in reqs if q.status is not None and not 200 <= q.status < 300]
            bad_samples = sum(q.nsamples for q in nonok)
            got = r.snapshot()
            dups = [(dict(k), t, len(vs)) for k, d in got.items() for t, vs in d.items() if len(vs) > 1]
            fail.check(not dups, f"{name}: samples delivered more than once: {dups[:3]}")
            deliv = delivered_keys(r)
            dropped = dropped_keys(r)
            missing = want - deliv - dropped
            fail.check(not missing, f"{name}: {len(missing)} stored samples neither delivered nor dropped, "
                       f"e.g. {sorted(missing)[:2]}")
            # samples_total counts every attempt, failed ones included (2.42)
            sent, failed, retried = m("samples_total", name), m("samples_failed_total", name), \
                m("samples_retried_total", name)
            fail.check(sent is not None and rec0[name] <= sent <= rec1[name],
                       f"{name}: samples_total {sent}, the receiver got {rec0[name]} samples in all attempts "
                       f"({rec1[name]} a moment later)")
            print(f"  {name}: {len(reqs)} requests, answers {dict(sorted(r.answered.items()))}; "
                  f"samples_total {sent}, failed {failed}, retried {retried}", flush=True)
            if name in ("q400", "q429drop"):
                fail.check(bad_samples > 0, f"{name}: no request was answered with an error")
                fail.check(deliv.isdisjoint(dropped) and want & dropped,
                           f"{name}: {len(deliv & dropped)} samples answered 4xx were delivered later "
                           f"(retried), {len(want & dropped)} dropped in the window")
                later = set()
                for q in reqs:
                    if q.status is not None and 200 <= q.status < 300:
                        later |= keys_of(q)
                fail.check(later.isdisjoint(dropped), f"{name}: 4xx samples sent again")
                fail.check(failed == bad_samples, f"{name}: samples_failed_total {failed}, "
                           f"the receiver answered 4xx to {bad_samples} samples")
                fail.check(retried == 0, f"{name}: samples_retried_total {retried}, want 0")
                fail.check(want - dropped <= deliv, f"{name}: the queue did not move on after the 4xx")
            else:
                fail.check(not dropped and want <= deliv, f"{name}: {len(want - deliv)} stored samples never "
                           f"delivered, {len(dropped)} dropped")
                fail.check(failed == 0, f"{name}: samples_failed_total {failed}, want 0")
                if name == "qslowok":
                    fail.check(retried == 0 and not nonok, f"{name}: retried {retried}, non-2xx {len(nonok)}")
                    fail.check(min((q.answered_at - q.time for q in reqs if q.answered_at), default=0) >= 0.45,
                               f"{name}: an answer came sooner than the receiver's delay")
                    hv = reqs[0].headers.get("x-scope-orgid") if reqs else None
                    print(f"  qslowok: configured header X-Scope-OrgID: {hv}")
                    if KIND == "kelvin":
                        fail.check(all(q.headers.get("x-scope-orgid") == "tenant-9" for q in reqs),
                                   f"{name}: configured header missing: {reqs[0].headers if reqs else None}")
                else:
                    fail.check(bad_samples > 0, f"{name}: no request was answered with an error")
                    fail.check(retried == bad_samples, f"{name}: samples_retried_total {retried}, the receiver "
                               f"failed {bad_samples} samples (all retriable)")
            if name == "q5xx":
                auth = "Basic " + base64.b64encode(b"user:secret").decode()
                fail.check(all(q.headers.get("authorization") == auth for q in reqs),
                           f"q5xx: Authorization {reqs[0].headers.get('authorization') if reqs else None}")
                times = [q.time for q in nonok]
                gaps = [b - a for a, b in zip(times, times[1:])]
                if gaps:
                    fail.check(min(gaps) >= 0.08 and max(gaps) <= 2.5,
                               f"q5xx: gaps between failed attempts {['%.2f' % g for g in gaps]} "
                               "(want back-off from 100ms, at most 1s + slack)")
                    print(f"  q5xx: back-off gaps {' '.join('%.2f' % g for g in gaps)}")
            if name == "q400":
                fail.check(all(q.headers.get("authorization") == "Bearer tok-1" for q in reqs),
                           f"q400: Authorization {reqs[0].headers.get('authorization') if reqs else None}")
            if name == "q429retry":
                after = [(a, b) for a, b in zip(reqs, reqs[1:]) if a.status == 429]
                short = [round(b.time - a.answered_at, 2) for a, b in after if b.time - a.answered_at < 1.8]
                fail.check(after and not short, f"q429retry: attempts sooner than Retry-After 2s: {short}")
            if name == "qslow":
                slow = [q for q in reqs if getattr(q, "slow", False)]
                fail.check(len(slow) == 3, f"qslow: {len(slow)} slow requests")
                for q in slow:
                    again = [q2 for q2 in reqs if q2.n > q.n and keys_of(q2) & keys_of(q)]
                    first = min((q2.time for q2 in again), default=None)
                    fail.check(first is not None and 0.9 <= first - q.time < 3.9,
                               f"qslow: request {q.n} (answered after 4 s) re-sent "
                               f"{'never' if first is None else '%.2f s later' % (first - q.time)}: "
                               "want after the 1 s remote_timeout, before the slow answer")
        rc = sender.stop()
        # a sanitizer's leak or error report ends the process with non-zero
        fail.check(rc == 0, f"the sender exited with {rc}; log:\n{st.tail(sender.log)}")
    finally:
        fx.stop()
        for r in recv.values():
            r.stop()
        st.finish(fail, work, "remote_write_errors", KIND)


if __name__ == "__main__":
    main()
