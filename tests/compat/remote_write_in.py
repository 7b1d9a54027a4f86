#!/usr/bin/python3
"""kelvin server's remote write receiver (POST /api/v1/write) against the
real Prometheus 2.42, sender and receiver.

Phase A, a real sender: Prometheus 2.42 scrapes a fixed exposition on
loopback every second (a counter, special values -- NaN, +Inf, -Inf, the
smallest subnormal, -0 --, escaped and non-ASCII label values, and a series
that vanishes half-way, so Prometheus sends its staleness marker) and
remote-writes everything it stores to kelvin (--web.enable-remote-write-
receiver). Then every series and sample Prometheus stored equals what kelvin
has: `{__name__=~".+"}[2m]` at the same time on both (labels, timestamps and
values exact, through the same query API; -0 arrives as 0, as proto3 sends
it), and the vanished series is absent
from both at the end while last_over_time() still finds it: kelvin got the
staleness marker. A POST to a server without the flag gets 404 (both).

Phase B, a real receiver: the same hand-made requests go to kelvin and to a
second Prometheus 2.42 with the receiver on; status codes and bodies must be
equal (bodies only by status where the words differ by design: protobuf-c
does not say why a message does not decode): bad snappy, empty and
truncated bodies, bad protobuf, unsorted labels, empty values, repeated
label names (500), empty label sets (500), native histograms (500), out of
order / duplicate / too old samples (400), a request rolled back by a too
old sample, disorder inside one request (dropped, 204), staleness markers,
exemplars and metadata, names and bytes 2.42 does not validate, wrong
methods (405 + Allow), OPTIONS. Afterwards both hold the same series and
samples. kelvin's documented differences (src/server/api_write.c) are
checked on kelvin alone.

Phase C, kelvin alone: malformed, truncated, valid-snappy-bad-protobuf and
oversized bodies (33 MiB compressed, a snappy header claiming 100 MiB) get
400 and change nothing (every sample, the head's series and append
counters, before and after), and the receiver's counters show on /metrics.
"""
import json
import os
import shutil
import struct
import sys
import tempfile
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import kelvintest as kt  # noqa: E402
from fixture_targets import FixtureServer, Target  # noqa: E402
from remote_write import encode_write_request as write_request, pb_field as field, pb_series  # noqa: E402
from remote_write import snappy_compress as snappy, stale_nan, uvarint as varint  # noqa: E402

PROMETHEUS = os.path.join(kt.PEERS, "bin", "prometheus")
STALE = stale_nan()
VANISH_AT = 6  # scrapes with rw_vanishing
WANT_SCRAPES = 14

# ---- processes -------------------------------------------------------------


def start_kelvin(work, name, receiver=True, extra=()):
    cfg = os.path.join(work, name + ".yml")
    with open(cfg, "w") as f:
        f.write("global:\n  scrape_interval: 15s\nscrape_configs: []\n")
    port = kt.free_port()
    cmd = [kt.KELVIN, "server", f"--config.file={cfg}", f"--storage.tsdb.path={os.path.join(work, name)}",
           f"--web.listen-address=127.0.0.1:{port}"] + list(extra)
    if receiver:
        cmd.append("--web.enable-remote-write-receiver")
    p = kt.start(cmd, log=os.path.join(work, name + ".log"))
    url = f"http://127.0.0.1:{port}"
    kt.wait_http(url + "/-/ready", deadline=30, proc=p)
    return p, url


def start_prometheus(work, name, config, receiver=False):
    cfg = os.path.join(work, name + ".yml")
    with open(cfg, "w") as f:
        f.write(config)
    port = kt.free_port()
    cmd = [PROMETHEUS, f"--config.file={cfg}", f"--storage.tsdb.path={os.path.join(work, name)}",
           f"--web.listen-address=127.0.0.1:{port}"]
    if receiver:
        cmd.append("--web.enable-remote-write-receiver")
    p = kt.start(cmd, log=os.path.join(work, name + ".log"))
    url = f"http://127.0.0.1:{port}"
    kt.wait_http(url + "/-/ready", deadline=60, proc=p)
    return p, url


def post(url, body, headers=None):
    h = {"Content-Type": "application/x-protobuf", "Content-Encoding": "snappy",
         "X-Prometheus-Remote-Write-Version": "0.1.0"} if headers is None else headers
    st, hdrs, b = kt.http(url + "/api/v1/write", "POST", body, h, timeout=60)
    return st, hdrs, b


def query(url, q, t):
    st, _, b = kt.http(url + "/api/v1/query?" + urllib.parse.urlencode({"query": q, "time": f"{t:.3f}"}))
    if st != 200:
        raise AssertionError(f"{url} query {q!r}: HTTP {st} {b[:300]!r}")
    d = json.loads(b)["data"]
    res = d["result"]
    if isinstance(res, list):
        res.sort(key=lambda r: json.dumps(r["metric"], sort_keys=True))
    return res


def metric(url, name, labels=""):
    samples, _, _ = kt.scrape(url + "/metrics")
    for n, l, v in samples:
        if n == name and (not labels or all(l.get(k) == val for k, val in labels.items())):
            return v
    return None


def exposition(n):
    """The fixture's body for its n-th scrape."""
    lines = [
        "# TYPE rw_counter_total counter",
        f'rw_counter_total{{kind="a"}} {n * 3}',
        f'rw_counter_total{{kind="b"}} {n * 0.1!r}',
        f'rw_gauge{{gpu="0",model="H100 \\"SXM\\"",path="C:\\\\x",note="line\\nbreak"}} {42.5 + n}',
        'rw_special{v="nan"} NaN',
        'rw_special{v="inf"} +Inf',
        'rw_special{v="ninf"} -Inf',
        'rw_special{v="tiny"} 5e-324',
        'rw_special{v="neg0"} -0',
        'rw_special{v="big"} 1.7976931348623157e+308',
        'rw_unicode{name="h\u00e9llo \u2713"} 7',
    ]
    if n < VANISH_AT:
        lines.append("rw_vanishing 1")
    return "\n".join(lines) + "\n"


# ---- phase A ---------------------------------------------------------------


def phase_a(f, work, kelvin, fixture):
    cfg = f"""global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: fixture
    static_configs: [{{targets: ['{fixture.address}']}}]
    metrics_path: /expo
remote_write:
  - url: {kelvin}/api/v1/write
    queue_config: {{batch_send_deadline: 1s, max_samples_per_send: 50, min_backoff: 100ms, max_backoff: 1s}}
    metadata_config: {{send_interval: 2s}}
"""
    p1, prom = start_prometheus(work, "sender", cfg)
    target = fixture["expo"]
    end = time.time() + 60
    while target.count < WANT_SCRAPES and time.time() < end:
        time.sleep(0.25)
    f.check(target.count >= WANT_SCRAPES, f"Prometheus scraped the fixture {target.count} times")
    first = target.times()[0]
    t = time.time() - 1.5
    window = int(t - first - 2)  # whole seconds after the first two scrapes
    q = '{__name__=~".+"}[%ds]' % window
    want = query(prom, q, t)
    # -0 crosses remote write as 0: proto3 leaves a zero double out of the
    # message, sign and all (a Prometheus receiver stores 0 as well)
    for r in want:
        r["values"] = [[ts, "0" if v == "-0" else v] for ts, v in r["values"]]
    nsamples = sum(len(r["values"]) for r in want)
    f.check(len(want) >= 15 and nsamples >= 15 * (window - 2), f"Prometheus holds {len(want)} series, "
            f"{nsamples} samples over {window}s")
    got = None
    end = time.time() + 40
    while time.time() < end:
        got = query(kelvin, q, t)
        if got == want:
            break
        time.sleep(0.5)
    if got != want:
        wm = {json.dumps(r["metric"], sort_keys=True): r["values"] for r in want}
        gm = {json.dumps(r["metric"], sort_keys=True): r["values"] for r in got}
        for k in sorted(set(wm) | set(gm)):
            if wm.get(k) != gm.get(k):
                f.check(False, f"series {k}: Prometheus {wm.get(k, 'absent')!s:.300} kelvin {gm.get(k, 'absent')!s:.300}")
    else:
        print(f"phase A: kelvin holds the same {len(want)} series and {nsamples} samples as Prometheus")
    # the staleness marker went through: gone at t on both, still found by last_over_time
    for name, url in (("Prometheus", prom), ("kelvin", kelvin)):
        f.check(query(url, "rw_vanishing", t) == [], f"{name}: rw_vanishing not stale at the end")
        f.check(len(query(url, "last_over_time(rw_vanishing[1m])", t)) == 1, f"{name}: rw_vanishing never stored")
    f.check(query(kelvin, 'rw_special{v="nan"}', t) == query(prom, 'rw_special{v="nan"}', t) != [],
            "the NaN series differs")
    # without the flag: 404 on both (the words differ: 2.42 names its older flag)
    st, _, body = post(prom, snappy(b""))
    f.check(st == 404 and b"remote write receiver needs to be enabled" in body, f"Prometheus without the flag: {st} {body!r}")
    kt.stop(p1)


def disabled(f, work):
    p, url = start_kelvin(work, "disabled", receiver=False)
    st, hdrs, body = post(url, snappy(b""))
    f.check((st, body) == (404, b"remote write receiver needs to be enabled with --web.enable-remote-write-receiver\n"),
            f"kelvin without the flag: {st} {body!r}")
    st, hdrs, _ = kt.http(url + "/api/v1/write")
    f.check(st == 405 and hdrs.get("Allow") == "OPTIONS, POST", f"kelvin without the flag, GET: {st} {hdrs.get('Allow')}")
    kt.stop(p)


# ---- phase B ---------------------------------------------------------------


def phase_b(f, work, kelvin):
    p2, prom = start_prometheus(work, "receiver", "global:\n  scrape_interval: 15s\nscrape_configs: []\n",
                                receiver=True)
    T = int(time.time() * 1000)
    S = lambda *a: snappy(write_request(list(a)))  # noqa: E731
    hist = field(4, 2, field(15, 0, T))
    exemplar = field(3, 2, field(1, 2, field(1, 2, b"trace_id") + field(2, 2, b"abc"))
                     + field(2, 1, struct.pack("<d", 1.5)) + field(3, 0, T))
    metadata = field(3, 2, field(1, 0, 2) + field(2, 2, b"rwx_meta") + field(4, 2, b"help"))
    # (name, body, compare: "exact" = status and body, "status" = status only)
    cases = [
        ("anchor", S(([("__name__", "rwx_anchor")], [(T, 1)])), "exact"),
        ("garbage", b"\xff\xfe not snappy at all", "exact"),
        ("empty body", b"", "exact"),
        ("truncated snappy", S(([("__name__", "rwx_trunc")], [(T, 1)]))[:-4], "exact"),
        ("snappy claims more", varint(1000) + snappy(b"abc")[1:], "exact"),
        ("valid snappy, bad protobuf", snappy(b"\x0a\x05abc"), "status"),
        ("wrong wire type", snappy(b"\x08\x05"), "status"),
        ("empty request", snappy(b""), "exact"),
        ("unsorted, empty values", S(([("job", "j"), ("zone", ""), ("__name__", "rwx_unsorted")], [(T, 2)])), "exact"),
        ("stored", S(([("__name__", "rwx_ooo")], [(T, 1)])), "exact"),
        ("out of order", S(([("__name__", "rwx_ooo")], [(T - 1000, 1)])), "exact"),
        ("duplicate", S(([("__name__", "rwx_ooo")], [(T, 2)])), "exact"),
        ("same again", S(([("__name__", "rwx_ooo")], [(T, 1)])), "exact"),
        ("too old rolls back", S(([("__name__", "rwx_rollback")], [(T, 1)]),
                                 ([("__name__", "rwx_old")], [(T - 3 * 3600 * 1000, 1)])), "exact"),
        ("repeated name", S(([("__name__", "rwx_dup"), ("job", "a"), ("job", "b")], [(T, 1)])), "exact"),
        ("repeated name, no samples", S(([("__name__", "rwx_dup0"), ("job", "a"), ("job", "b")], [])), "exact"),
        ("repeated then out of order", S(([("__name__", "rwx_dup2"), ("job", "a"), ("job", "b")], [(T, 1)]),
                                         ([("__name__", "rwx_ooo")], [(T - 5000, 1)])), "exact"),
        ("empty value dropped first", S(([("__name__", "rwx_dupempty"), ("job", ""), ("job", "x")], [(T, 3)])), "exact"),
        ("empty labelset", S(([("a", "")], [(T, 1)])), "exact"),
        ("no labels", S(([], [(T, 1)])), "exact"),
        ("native histogram", snappy(field(1, 2, pb_series([("__name__", "rwx_hist")], [(T, 1)], hist))), "exact"),
        ("disorder inside a request", S(([("__name__", "rwx_disorder")], [(T - 3000, 1), (T - 1000, 2), (T - 2000, 3),
                                                                         (T - 1000, 4), (T, 5)])), "exact"),
        ("same series twice", S(([("__name__", "rwx_twice")], [(T - 1000, 1)]), ([("__name__", "rwx_twice")],
                                                                                  [(T - 2000, 2), (T, 3)])), "exact"),
        ("staleness marker", S(([("__name__", "rwx_stale")], [(T - 2000, 1), (T - 1000, STALE)])), "exact"),
        ("exemplars and metadata", snappy(metadata + field(1, 2, pb_series([("__name__", "rwx_ex")], [(T, 1)], exemplar))),
         "exact"),
        ("names and bytes 2.42 does not check", S(([("__name__", "rwx_odd"), ("a-b", "\xff".encode("latin-1")),
                                                   ("1x", "v")], [(T, 1)])), "exact"),
        ("no metric name", S(([("job", "rwx_noname")], [(T, 1)])), "exact"),
        ("special values", S(([("__name__", "rwx_special"), ("v", "nan")], [(T, float("nan"))]),
                             ([("__name__", "rwx_special"), ("v", "inf")], [(T, float("inf"))]),
                             ([("__name__", "rwx_special"), ("v", "neg0")], [(T, -0.0)])), "exact"),
        ("no content headers", S(([("__name__", "rwx_nohdr")], [(T, 1)])), "exact"),
    ]
    for name, body, how in cases:
        hdrs = {} if name == "no content headers" else None
        a = post(prom, body, hdrs)
        b = post(kelvin, body, hdrs)
        same = a[0] == b[0] and (how == "status" or a[2] == b[2])
        f.check(same, f"{name}: Prometheus {a[0]} {a[2][:120]!r}, kelvin {b[0]} {b[2][:120]!r}")
        f.check(a[0] != 404, f"{name}: Prometheus's receiver is off")
    for method, want in (("GET", 405), ("PUT", 405), ("DELETE", 405), ("OPTIONS", 204)):
        a = kt.http(prom + "/api/v1/write", method, b"" if method == "PUT" else None)
        b = kt.http(kelvin + "/api/v1/write", method, b"" if method == "PUT" else None)
        f.check(a[0] == b[0] == want and a[1].get("Allow") == b[1].get("Allow") and a[2] == b[2],
                f"{method}: Prometheus {a[0]} {a[1].get('Allow')} {a[2]!r}, kelvin {b[0]} {b[1].get('Allow')} {b[2]!r}")

    # both hold the same now
    t = T / 1000 + 1
    for q in ('{__name__=~"rwx_.+"}[1h]', '{job="rwx_noname"}[1h]', 'rwx_stale', 'last_over_time(rwx_stale[1h])'):
        a, b = query(prom, q, t), query(kelvin, q, t)
        f.check(a == b, f"after phase B, {q}: Prometheus {a!s:.400} kelvin {b!s:.400}")
    f.check(query(kelvin, "rwx_rollback", t) == [], "kelvin kept a series of a request refused as too old")
    f.check(len(query(kelvin, "rwx_disorder[1h]", t)) == 1, "rwx_disorder missing")

    # kelvin's documented differences (src/server/api_write.c), kelvin alone:
    # the samples the head took before refusing one stay (2.42 rolls back)
    st, _, body = post(kelvin, S(([("__name__", "rwk_kept")], [(T, 1)]), ([("__name__", "rwx_ooo")], [(T - 9000, 1)])))
    f.check((st, body) == (400, b"out of order sample\n"), f"kept: {st} {body!r}")
    f.check(len(query(kelvin, "rwk_kept", t)) == 1, "rwk_kept: kelvin's documented behaviour changed")
    # an empty label name: 2.42 stores the series, kelvin skips and counts it
    before = metric(kelvin, "kelvin_remote_write_invalid_labels_samples_total") or 0
    st, _, body = post(kelvin, S(([("__name__", "rwk_emptyname"), ("", "v")], [(T, 1), (T + 1, 2)])))
    f.check(st == 204, f"empty label name: {st} {body!r}")
    f.check(metric(kelvin, "kelvin_remote_write_invalid_labels_samples_total") == before + 2,
            "empty label name: not counted")
    kt.stop(p2)
    return T


# ---- phase C ---------------------------------------------------------------


def state(kelvin, t):
    return (query(kelvin, '{__name__=~".+"}[1h]', t), query(kelvin, '{job="rwx_noname"}[1h]', t),
            metric(kelvin, "kelvin_tsdb_head_series"), metric(kelvin, "kelvin_tsdb_head_samples_appended_total"))


def phase_c(f, kelvin, T):
    t = T / 1000 + 2
    before = state(kelvin, t)
    f.check(before[0] and before[2] and before[3], f"kelvin holds nothing? {before[2:]}")
    valid = write_request([([("__name__", "rwc_new"), ("i", str(i))], [(T + 10, float(i))]) for i in range(50)])
    bad = [
        ("garbage", b"\x00\x01\x02 garbage \xff" * 10, b"snappy: corrupt input\n"),
        ("truncated snappy", snappy(valid)[:-7], b"snappy: corrupt input\n"),
        ("truncated in the header", snappy(valid)[:1], b"snappy: corrupt input\n"),
        ("valid snappy, truncated protobuf", snappy(valid[:-3]), b"proto: cannot decode prometheus.WriteRequest\n"),
        ("valid snappy, garbage protobuf", snappy(b"\xff" * 64), b"proto: cannot decode prometheus.WriteRequest\n"),
        ("decoded size over 64 MiB", varint(100 << 20) + b"\x00" * 64, b"snappy: decoded block is too large"),
        ("body over 32 MiB", snappy(b"\x0a\x00" * (17 << 20)), b"snappy: compressed body of"),
    ]
    for name, body, want in bad:
        st, _, got = post(kelvin, body)
        f.check(st == 400 and got.startswith(want), f"{name}: {st} {got[:200]!r}")
    after = state(kelvin, t)
    f.check(after == before, "bad bodies changed kelvin's data: " +
            ("samples" if after[0] != before[0] else f"counters {before[2:]} -> {after[2:]}"))
    st, _, got = post(kelvin, snappy(valid))
    f.check(st == 204 and len(query(kelvin, "rwc_new", t)) == 50, f"a valid request after the bad ones: {st} {got!r}")
    f.check((metric(kelvin, "kelvin_remote_write_requests_total", {"code": "400"}) or 0) >= len(bad),
            "kelvin_remote_write_requests_total{code=\"400\"} too low")
    f.check((metric(kelvin, "kelvin_remote_write_samples_appended_total") or 0) > 50,
            "kelvin_remote_write_samples_appended_total too low")


def main():
    f = kt.Failures()
    work = tempfile.mkdtemp(prefix="kelvin-rw-in-")
    fixture = None
    try:
        if not os.access(PROMETHEUS, os.X_OK):
            raise AssertionError(f"{PROMETHEUS} not found (run scripts/peers)")
        fixture = FixtureServer([Target("expo", exposition)]).start()
        _, kelvin = start_kelvin(work, "kelvin")
        phase_a(f, work, kelvin, fixture)
        disabled(f, work)
        T = phase_b(f, work, kelvin)
        phase_c(f, kelvin, T)
    finally:
        if fixture:
            fixture.stop()
        kt.stop_all()
        if not f.items:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print("logs kept in", work)
        f.finish("remote_write_in")


if __name__ == "__main__":
    main()
