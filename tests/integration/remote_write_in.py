#!/usr/bin/python3
"""kelvin server's remote write receiver and /federate, end to end, without
Prometheus (tests/compat/remote_write_in.py and tests/compat/federate.py
compare both with the real 2.42). Expected answers are written here from
2.42's rules (src/server/api_write.c, src/server/federate.c), never taken
from kelvin:

- /federate of remote-written data, byte for byte, timestamps included:
  `# TYPE` lines, names sorted, each series' newest sample within the
  5-minute lookback (an older one is left out, so is a staleness marker),
  external labels from the configuration added unless the series has the
  label, `instance=""` on series without one, value formats, escapes;
  match[] errors, no match[], methods;
- the receiver with an out-of-order window
  (--storage.tsdb.out-of-order-time-window): a sample inside the window is
  stored (204), one older than the window is 500 "too old sample" (2.42's
  answer for ErrTooOldSample), disorder inside one request is kept;
- a body over --web.max-request-size is refused by the HTTP layer (413)
  before the receiver reads it; an empty request is 204;
- the receiver's counters on /metrics.
"""
import os
import shutil
import sys
import tempfile
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import kelvintest as kt  # noqa: E402
from remote_write import encode_write_request as write_request, snappy_compress as snappy, stale_nan  # noqa: E402

STALE = stale_nan()


def start(work, name, config, *flags):
    cfg = os.path.join(work, name + ".yml")
    with open(cfg, "w") as f:
        f.write(config)
    port = kt.free_port()
    p = kt.start([kt.KELVIN, "server", f"--config.file={cfg}", f"--storage.tsdb.path={os.path.join(work, name)}",
                  f"--web.listen-address=127.0.0.1:{port}", "--web.enable-remote-write-receiver"] + list(flags),
                 log=os.path.join(work, name + ".log"))
    url = f"http://127.0.0.1:{port}"
    kt.wait_http(url + "/-/ready", deadline=30, proc=p)
    return url


def post(url, body):
    st, _, b = kt.http(url + "/api/v1/write", "POST", body,
                       {"Content-Type": "application/x-protobuf", "Content-Encoding": "snappy"}, timeout=30)
    return st, b


def federate_tests(f, url):
    now = int(time.time() * 1000)
    t1, t2 = now - 20000, now - 10000
    old = now - 6 * 60 * 1000
    series = [
        ([("__name__", "gpu_temp"), ("gpu", "1"), ("instance", "n1:9400")], [(t1, 40), (t2, 41.5)]),
        ([("__name__", "gpu_temp"), ("gpu", "0"), ("instance", "n1:9400")], [(t1, 39), (t2, 1e6)]),
        ([("__name__", "gpu_power"), ("gpu", "0"), ("region", "us"), ("note", 'a"b\\c\nd')], [(t2, -0.0)]),
        ([("__name__", "gpu_power"), ("gpu", "1")], [(t1, float("inf"))]),
        ([("__name__", "gpu_power"), ("gpu", "2")], [(t1, float("nan"))]),
        ([("__name__", "gpu_power"), ("gpu", "3")], [(t1, 1.25e-7)]),
        ([("__name__", "gpu_power"), ("gpu", "4")], [(t1, -1)]),
        ([("__name__", "gone")], [(t1, 1), (t2, STALE)]),
        ([("__name__", "too_old")], [(old, 1)]),
        ([("__name__", "a_first"), ("x", "y")], [(t2, 123456789012)]),
        ([("job", "nameless")], [(t2, 1)]),
    ]
    st, body = post(url, snappy(write_request(series)))
    f.check(st == 204, f"loading: {st} {body!r}")
    ext = 'replica="r1",zone="eu"'
    want = (
        "# TYPE a_first untyped\n"
        f'a_first{{x="y",instance="",{ext}}} 1.23456789012e+11 {t2}\n'
        "# TYPE gpu_power untyped\n"
        f'gpu_power{{gpu="0",note="a\\"b\\\\c\\nd",region="us",instance="",{ext}}} 0 {t2}\n'
        f'gpu_power{{gpu="1",instance="",{ext}}} +Inf {t1}\n'
        f'gpu_power{{gpu="2",instance="",{ext}}} NaN {t1}\n'
        f'gpu_power{{gpu="3",instance="",{ext}}} 1.25e-07 {t1}\n'
        f'gpu_power{{gpu="4",instance="",{ext}}} -1 {t1}\n'
        "# TYPE gpu_temp untyped\n"
        f'gpu_temp{{gpu="0",instance="n1:9400",{ext}}} 1e+06 {t2}\n'
        f'gpu_temp{{gpu="1",instance="n1:9400",{ext}}} 41.5 {t2}\n'
    )
    st, hdrs, body = kt.http(url + "/federate?" + urllib.parse.urlencode({"match[]": '{__name__=~".+"}'}))
    f.check(st == 200 and hdrs.get("Content-Type") == "text/plain; version=0.0.4; charset=utf-8",
            f"federate: {st} {hdrs.get('Content-Type')}")
    f.check(body.decode() == want, "federate body:\n" + body.decode() + "\nwant:\n" + want)
    # two overlapping selectors: each series once
    q = urllib.parse.urlencode([("match[]", "gpu_temp"), ("match[]", 'gpu_temp{gpu="1"}'), ("match[]", "a_first")])
    st, _, body = kt.http(url + "/federate?" + q)
    f.check(body.decode() == want.split("# TYPE gpu_power")[0] + "# TYPE gpu_temp" + want.split("# TYPE gpu_temp")[1],
            "overlapping selectors:\n" + body.decode())
    # a series with its own zone label keeps it
    st, body = post(url, snappy(write_request([([("__name__", "zoned"), ("zone", "us")], [(t2, 2)])])))
    st, _, body = kt.http(url + "/federate?match[]=zoned")
    f.check(body.decode() == f'# TYPE zoned untyped\nzoned{{zone="us",instance="",replica="r1"}} 2 {t2}\n',
            "own label kept:\n" + body.decode())
    for q, want_st, want_body in (
        ("", 200, b""),
        ("?match[]=nothing", 200, b""),
        ("?match[]=up{", 400, b"1:4: parse error: unexpected end of input inside braces\n"),
        ("?match[]=rate(x[5m])", 400, b'1:5: parse error: unexpected "("\n'),
    ):
        st, _, body = kt.http(url + "/federate" + q)
        f.check((st, body) == (want_st, want_body), f"federate{q}: {st} {body!r}")
    st, hdrs, body = kt.http(url + "/federate?match[]=up", "POST", b"")
    f.check((st, hdrs.get("Allow"), body) == (405, "GET, OPTIONS", b"Method Not Allowed\n"),
            f"POST /federate: {st} {hdrs.get('Allow')} {body!r}")
    st, hdrs, body = kt.http(url + "/federate", "OPTIONS")
    f.check((st, hdrs.get("Allow")) == (200, "GET, OPTIONS"), f"OPTIONS /federate: {st} {hdrs.get('Allow')}")


def window_tests(f, url):
    now = int(time.time() * 1000)
    st, body = post(url, snappy(write_request([([("__name__", "w")], [(now, 1)])])))
    f.check(st == 204, f"window, first: {st} {body!r}")
    st, body = post(url, snappy(write_request([([("__name__", "w")], [(now - 60000, 2)])])))
    f.check(st == 204, f"window, out of order inside the window: {st} {body!r}")
    st, body = post(url, snappy(write_request([([("__name__", "w")], [(now - 20 * 60000, 3)])])))
    f.check((st, body) == (500, b"too old sample\n"), f"window, older than the window: {st} {body!r}")
    st, body = post(url, snappy(write_request([([("__name__", "w2")], [(now, 1), (now - 30000, 2), (now - 30000, 5)])])))
    f.check(st == 204, f"window, disorder inside a request: {st} {body!r}")
    q = urllib.parse.urlencode({"query": "count_over_time(w[1h]) + count_over_time(w2[1h]) * 10", "time": now / 1000 + 1})
    st, _, body = kt.http(url + "/api/v1/query?" + q)
    f.check(b'"value":[' in body and b'"22"]' in body, f"window: stored samples {body!r}")


def limits_tests(f, url):
    st, body = post(url, snappy(b""))
    f.check(st == 204, f"empty request: {st} {body!r}")
    st, body = post(url, snappy(b"\x0a\x00" * (600 << 10)))  # 1.2 MB over a 1 MB limit
    f.check(st == 413, f"over --web.max-request-size: {st} {body[:100]!r}")
    samples, _, _ = kt.scrape(url + "/metrics")
    names = {n: v for n, l, v in samples if not l or l.get("code") == "204"}
    for n in ("kelvin_remote_write_requests_total", "kelvin_remote_write_samples_appended_total",
              "kelvin_remote_write_samples_rejected_total", "kelvin_remote_write_samples_dropped_total",
              "kelvin_remote_write_invalid_labels_samples_total", "kelvin_remote_write_exemplars_dropped_total",
              "prometheus_web_federation_errors_total"):
        f.check(n in names, f"/metrics lacks {n}")
    f.check(names.get("kelvin_remote_write_requests_total", 0) >= 1, "no 204 counted")


def main():
    f = kt.Failures()
    work = tempfile.mkdtemp(prefix="kelvin-rw-integ-")
    try:
        cfg = ("global:\n  scrape_interval: 15s\n  external_labels: {zone: eu, replica: r1}\n"
               "scrape_configs: []\n")
        url = start(work, "fed", cfg, "--web.max-request-size=1MB")
        federate_tests(f, url)
        limits_tests(f, url)
        url2 = start(work, "window", "scrape_configs: []\n", "--storage.tsdb.out-of-order-time-window=10m")
        window_tests(f, url2)
    finally:
        kt.stop_all()
        if not f.items:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print("logs kept in", work)
        f.finish("remote_write_in")


if __name__ == "__main__":
    main()
