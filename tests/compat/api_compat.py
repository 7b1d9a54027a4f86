#!/usr/bin/python3
"""The HTTP API of `kelvin server` against Prometheus 2.42's, on the same data.

The OpenMetrics file of tests/integration/api.py (write_dataset) is
backfilled into both (`promtool tsdb create-blocks-from openmetrics` and
`kelvin tsdb create-blocks-from openmetrics`), both servers are started on
loopback ports with the same empty scrape configuration and the admin API,
and the same requests go to both. Compared:

- answers byte for byte (status code, Content-Type, body) for series,
  labels, label values, exemplars, rules, alerts, simple queries (instant
  and range: selectors, range selectors, scalars, strings, a few
  operators and aggregations -- the query-heavy differential suite is
  tests/compat/promql_diff.py), GET and POST form bodies, Unix and
  RFC 3339 times, and a battery of bad requests: missing and invalid
  parameters, bad times (out-of-range dates, too many fractional digits,
  hex, underscores, infinities, Prometheus's own min/max time strings),
  bad steps, too many points, parse errors, bad matchers (match[] and
  match_target as 2.42's ParseMetricSelector parses them: ~90 selectors
  on every endpoint that takes one), bad form
  encodings, unknown paths, wrong methods (405 with Allow), OPTIONS;
- gzip and deflate: the decompressed bodies (answers built whole), while
  every plain query answer with a point is streamed
  (KELVIN_API_STREAM_MIN_POINTS=1: written while sent, chunked), those of
  2 points or more by a helper thread and the sending thread in blocks
  (KELVIN_API_STREAM_HELP_MIN_POINTS=2), so all three ways of writing an
  answer are compared byte for byte;
- status endpoints: shapes (field names and order, value types) where the
  values differ by nature (build, flags, runtime);
- admin: delete_series (204), then both list the same series and answer
  the same queries; clean_tombstones (204); snapshot's parameter error.

Known differences are listed in KNOWN with the reason; the test fails on
any other difference.
"""
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
os.environ["KELVIN_API_STREAM_MIN_POINTS"] = "1"  # the kelvin server started below inherits it
# answers of 2 points or more are written by two threads in blocks of 2 points
os.environ["KELVIN_API_STREAM_HELP_MIN_POINTS"] = "2"
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
import kelvintest as kt  # noqa: E402
import api as apitest  # noqa: E402

PROMTOOL = os.path.join(kt.PEERS, "bin", "promtool")
PROMETHEUS = os.path.join(kt.PEERS, "bin", "prometheus")
T0 = apitest.T0

# Requests whose answers differ, and why: {name: reason}.
KNOWN = {}
# match[] values, parsed by 2.42's parser.ParseMetricSelector: keywords as
# names, lexer and grammar errors and their positions, regexes (the value
# must also parse alone: `a)|(b`), NUL bytes in messages, a long one.
SELECTORS = [
    "temp", "temp{}", 'temp{gpu="1"}', '{__name__="temp"}', 'temp{__name__="odd"}', "{}", '{a=""}', '{a="",}',
    "sum", "by", "offset", "and", "start", "count_values", 'sum{job="api"}', "bool", "on", "atan2", "nan", "Inf",
    "", " ", "rate(temp[1m])", "sum(temp)", "sum by (job) (temp)", "temp[5m]", 'temp{gpu="1"}[5m]',
    "temp offset 5m", "temp @ 10", "temp bar", 'temp{a="b"} x', 'temp{a="b"}{c="d"}', "(temp)", "-temp", "1",
    '"temp"', "5m", "temp + odd", 'temp{a="b"} or {c="d"}', "temp,", "temp)", "temp}", "}", "{", "temp{",
    '{a="b"', '{a="b', '{a="b" x}', "{a}", "{a=}", "{a=b}", '{="b"}', '{a="b",,}', "{,}", 'temp{a=="b"}',
    'temp{1="b"}', "temp{a=1}", 'temp{a~"b"}', "temp{!}", "temp!", "temp$", "temp.x", "t\u00e9mp", "#c\ntemp",
    "temp #c", "\ntemp{a=\"b\"\n x}", "temp{a='b'}", "temp{a=`b`}", 'temp{a="\\x"}', 'temp{a="\\"}',
    '{a=~"("}', '{a=~")"}', '{a!~"["}', '{a=~"a)|(b"}', 'temp{gpu=~"1)|(2"}', '{a!~"x)(y"}', '{a=~"(a))|((b"}',
    '{a=~"a)|(b{1001}"}', '{a=~"x**"}', '{a=~"\\\\p{Foo}"}', '{__name__=~"temp|odd"}', '{a=~"\\\\)"}',
    '{a=~"\x00("}', '{a=~"a)|(\x00"}', '{a="\x00"}', "\x00", '{a=~"' + "x" * 3000 + ')|("}', "temp " + "y" * 3000,
]
# Requests where Prometheus's own answer is racy: only the status code,
# Content-Type and errorType are compared. {name: reason}
LOOSE = {
    "query timeout -1": "2.42 says `query timed out in query queue` or `... in query execution` depending on "
                        "where its goroutine notices the expired context first; kelvin always says execution",
}


def backfill(tool, om, out):
    cmd = [tool, "tsdb", "create-blocks-from", "openmetrics", om, out]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
    if p.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} failed: {p.stderr[-500:]}")


def start_prometheus(work, data_dir):
    cfg = os.path.join(work, "prom.yml")
    with open(cfg, "w") as f:
        f.write("global:\n  scrape_interval: 15s\nscrape_configs: []\n")
    port = kt.free_port()
    p = kt.start([PROMETHEUS, f"--storage.tsdb.path={data_dir}", f"--config.file={cfg}",
                  f"--web.listen-address=127.0.0.1:{port}", "--web.enable-admin-api"],
                 log=os.path.join(work, "prometheus.log"))
    url = f"http://127.0.0.1:{port}"
    kt.wait_http(url + "/-/ready", deadline=60, proc=p)
    return p, url


def P(*pairs):
    return list(pairs)


def requests():
    """(name, method, path, params or None, raw body or None, raw query or None)"""
    r = []

    def add(name, method, path, params=(), body=None, raw_query=None, both=True):
        r.append((name, method, path, list(params), body, raw_query))
        if both and method == "GET" and body is None and raw_query is None:
            r.append((name + " [POST]", "POST", path, list(params), None, None))

    t = str(T0 + 100)
    # ---- queries
    for q in ("temp", 'temp{gpu="1"}', "special", "odd", "temp[1m]", "http_requests_total[45s]", "1", "1e-7",
              "1e22", "-0", "NaN", "-Inf", "0x10", '"a<b>&\\u2028\\xff"', "1+1", "temp * 2", "sum(temp)",
              'sum by (job) (http_requests_total)', "max_over_time(temp[5m])", "nope", "time()", "vector(1)"):
        add(f"query {q}", "GET", "/api/v1/query", P(("query", q), ("time", t)))
    for tv in ("1699999300.5", "1699999300.5004", "1699999300.0005", "2023-11-14T22:01:40.5Z",
               "2023-11-14T23:01:40.500+01:00", "2023-11-14T22:01:40,5Z", "2023-11-14T2:01:40Z", "1_699_999_300",
               "0x1p4", "-1.5", "1e3", ".5", "5.", "+1", "inf", "-Inf", "nan", "1e18", "9.3e18",
               "-292273086-05-16T16:47:06Z", "292277025-08-18T07:12:54.999999999Z",
               "2023-11-14T22:01:40.123456789Z", "2023-11-14T22:01:40+25:00", "1969-12-31T23:59:59.9995Z"):
        add(f"query time() at {tv}", "GET", "/api/v1/query", P(("query", "time()"), ("time", tv)))
    for tv in ("x", "0x10", "1__0", "_1", "2023-02-30T00:00:00Z", "2023-01-02T24:00:00Z",
               "2023-01-02T03:04:60Z", "2023-01-02t03:04:05Z", "2023-01-02T03:04:05z", "2023-01-02",
               "2023-01-02T03:04:05.1234567891Z", "2023-01-02T03:04:05.Z", "2023-1-02T03:04:05Z",
               "02023-01-02T03:04:05Z", "2023-01-02T03:04:05+0100", " 1", "1e400", "0x1p"):
        add(f"query bad time {tv!r}", "GET", "/api/v1/query", P(("query", "1"), ("time", tv)))
    for q in ("1+", "", "sum(", "temp{", "rate(temp)", "foo bar", "temp[5m", '"unterminated', "1 +* 2",
              "sum(temp) by", "temp offset", "{}", '{a=""}', "temp @ start()", "(temp", 'temp{a=~"a)|(b"}',
              'rate(temp{a=~"\x00("}[1m])', 'sum(temp{a=~"a)|(\x00"})', 'temp{a=~"' + "x" * 3000 + ')|("}',
              "temp + " + "y" * 3000 + "("):
        add(f"query parse error {q!r}", "GET", "/api/v1/query", P(("query", q), ("time", "1")))
    for to in ("abc", "1x", "-1s", "9.3e9", "inf", "1_0", "0x1p4"):
        add(f"query timeout {to}", "GET", "/api/v1/query", P(("query", "1"), ("time", "1"), ("timeout", to)))
    add("query timeout -1", "GET", "/api/v1/query", P(("query", "1"), ("time", "1"), ("timeout", "-1")))
    # ---- ranges
    rng = P(("start", str(T0 + 15)), ("end", "2023-11-14T22:02:00Z"))
    for q in ("temp", "1", "temp * 2", "sum(temp)", "nope", "time()"):
        for step in ("15", "15s", "15000ms", "1.5e1", "0x1p4", "1_5", "7.5", "1m"):
            add(f"range {q} step {step}", "GET", "/api/v1/query_range", P(("query", q), *rng, ("step", step)))
    for q in ('temp{a=~"a)|(b"}', 'temp{a=~"(\x00"}', 'temp{a=~"' + "x" * 3000 + ')|("}'):
        add(f"range parse error {q!r}", "GET", "/api/v1/query_range",
            P(("query", q), ("start", "1"), ("end", "2"), ("step", "1")))
    add("range fractional step", "GET", "/api/v1/query_range",
        P(("query", "1"), ("start", "0"), ("end", "3"), ("step", "1.5")))
    add("range 11000 points", "GET", "/api/v1/query_range",
        P(("query", "1"), ("start", "0"), ("end", "11000"), ("step", "1")))
    bad_ranges = [
        P(("query", "1"), ("end", "2"), ("step", "1")),
        P(("query", "1"), ("start", "2"), ("step", "1")),
        P(("query", "1"), ("start", "2"), ("end", "3")),
        P(("query", "1"), ("start", "1"), ("end", "0"), ("step", "1")),
        P(("query", "1"), ("start", "x"), ("end", "0"), ("step", "1")),
        P(("query", "1"), ("start", "1"), ("end", "y"), ("step", "1")),
        P(("query", "1"), ("start", "1"), ("end", "2"), ("step", "0")),
        P(("query", "1"), ("start", "1"), ("end", "2"), ("step", "-1")),
        P(("query", "1"), ("start", "1"), ("end", "2"), ("step", "-1m")),
        P(("query", "1"), ("start", "1"), ("end", "2"), ("step", "nan")),
        P(("query", "1"), ("start", "1"), ("end", "2"), ("step", "inf")),
        P(("query", "1"), ("start", "1"), ("end", "2"), ("step", "9.3e9")),
        P(("query", "1"), ("start", "1"), ("end", "2"), ("step", "1e-10")),
        P(("query", "1"), ("start", "1"), ("end", "2"), ("step", "x")),
        P(("query", "1"), ("start", "0"), ("end", "11001"), ("step", "1")),
        P(("query", "1"), ("start", "0"), ("end", "3"), ("step", "0.0001")),
        P(("query", "1"), ("start", "0"), ("end", "0"), ("step", "0.0001")),
        P(("query", "1"), ("start", "-292273086-05-16T16:47:06Z"), ("end", "292277025-08-18T07:12:54.999999999Z"),
          ("step", "1")),
        P(("query", "temp[1m]"), ("start", "0"), ("end", "1"), ("step", "1")),
        P(("query", '"s"'), ("start", "0"), ("end", "1"), ("step", "1")),
        P(("query", "1+"), ("start", "0"), ("end", "1"), ("step", "1")),
        P(("start", "0"), ("end", "1"), ("step", "1")),
        P(("query", "1"), ("start", "0"), ("end", "1"), ("step", "1"), ("timeout", "x")),
        P(("query", "1+"), ("start", "0"), ("end", "1"), ("step", "1"), ("timeout", "-1")),
    ]
    for i, params in enumerate(bad_ranges):
        add(f"bad range {i} {params}", "GET", "/api/v1/query_range", params)
    # ---- exemplars
    for params in (P(("query", "temp")), P(("query", "1+1")), P(), P(("query", "temp{")),
                   P(("query", "temp"), ("start", "5"), ("end", "4")), P(("query", "temp"), ("start", "x")),
                   P(("query", "temp"), ("end", "x")), P(("query", "sum(rate(temp[1m]))"), ("start", str(T0)))):
        add(f"exemplars {params}", "GET", "/api/v1/query_exemplars", params)
    # ---- series, labels, values
    for params in (P(("match[]", "temp")), P(("match[]", '{__name__=~".+"}')),
                   P(("match[]", "temp"), ("match[]", "odd"), ("match[]", "temp")),
                   P(("match[]", '{__name__=~"temp|odd"}'), ("start", "2023-11-14T23:00:00Z"), ("end", str(T0 + 7200))),
                   P(("match[]", "temp"), ("start", str(T0 + 86400))),
                   P(("match[]", 'http_requests_total{code!="200",job=~"a.*"}')),
                   P(("match[]", "special"), ("start", str(T0 + 700)), ("end", str(T0 + 800))),
                   P(), P(("match[]", "temp"), ("start", "x")), P(("match[]", "temp"), ("end", "x")),
                   P(("match[]", '{a=""}')), P(("match[]", "temp{")), P(("match[]", "temp"), ("match[]", "{")),
                   P(("match[]", "rate(temp[1m])")), P(("match[]", "temp"), ("start", "3"), ("end", "2")),
                   P(("match[]", '{__name__=~"(("}'))):
        add(f"series {params}", "GET", "/api/v1/series", params)
    for sel in SELECTORS:
        add(f"series selector {sel!r}", "GET", "/api/v1/series", P(("match[]", sel)))
        add(f"labels selector {sel!r}", "GET", "/api/v1/labels", P(("match[]", sel)), both=False)
        add(f"values selector {sel!r}", "GET", "/api/v1/label/job/values", P(("match[]", sel)), both=False)
        add(f"targets/metadata selector {sel!r}", "GET", "/api/v1/targets/metadata", P(("match_target", sel)),
            both=False)
    add("series second selector bad", "GET", "/api/v1/series", P(("match[]", "temp"), ("match[]", '{a=~"a)|(b"}')))
    for params in (P(), P(("match[]", "temp")), P(("match[]", "temp"), ("match[]", 'special{kind="nan"}')),
                   P(("start", str(T0 + 7200))), P(("match[]", '{__name__=~".+"}'), ("start", str(T0 + 7200))),
                   P(("start", "3"), ("end", "2")), P(("match[]", "temp{")), P(("match[]", '{a=~".*"}')),
                   P(("end", "x")), P(("start", "2023-11-14T22:00:00Z"), ("end", "2023-11-14T22:10:00Z"))):
        add(f"labels {params}", "GET", "/api/v1/labels", params)
    for name in ("__name__", "job", "v", "kind", "nope", "1x", "a-b", "%5F%5Fname%5F%5F", "%C3%A9"):
        for params in (P(), P(("match[]", 'http_requests_total{code="500"}')), P(("match[]", "temp{")),
                       P(("start", str(T0 + 7200))), P(("match[]", "temp"), ("match[]", "odd"))):
            add(f"values {name} {params}", "GET", f"/api/v1/label/{name}/values", params, both=False)
    # ---- form encodings
    for body in ("match[]=temp&x=%zz", "match[]=temp&x=1;2", "match[]=temp&x=%zz&y=1;2", "match[]=temp&x=%2",
                 "match%5B%5D=temp&match%5B%5D=odd", "match[]=temp&&&=x", "match[]=te%6Dp", "match[]=%7Bjob%3D%22api%22%7D"):
        add(f"series body {body!r}", "POST", "/api/v1/series", body=body)
        add(f"labels body {body!r}", "POST", "/api/v1/labels", body=body)
    add("series URL and body", "POST", "/api/v1/series?match[]=odd", body="match%5B%5D=temp")
    add("query body wins over URL", "POST", "/api/v1/query?query=2&time=1", body="query=temp&time=" + t)
    add("query text/plain body ignored", "POST", "/api/v1/query?time=1", body="query=temp")
    # ---- routing
    for method, path in (("GET", "/api/v1/nope"), ("PUT", "/api/v1/query"), ("POST", "/api/v1/label/job/values"),
                         ("HEAD", "/api/v1/labels"), ("GET", "/api/v1/admin/tsdb/delete_series"),
                         ("POST", "/api/v1/status/config"), ("OPTIONS", "/api/v1/query"),
                         ("OPTIONS", "/api/v1/nope"), ("DELETE", "/api/v1/series"), ("PATCH", "/api/v1/query"),
                         ("GET", "/api/v1/rules"), ("GET", "/api/v1/alerts"), ("GET", "/api/v1/alertmanagers"),
                         ("GET", "/api/v1/targets"), ("GET", "/api/v1/targets?state=active"),
                         ("GET", "/api/v1/metadata"), ("GET", "/api/v1/targets/metadata"),
                         ("GET", "/api/v1/label//values"), ("GET", "/api/v1/label/job")):
        add(f"{method} {path}", method, path, both=False)
    add("rules bad type", "GET", "/api/v1/rules", P(("type", "Bad")), both=False)
    add("metadata bad limit", "GET", "/api/v1/metadata", P(("limit", "x")), both=False)
    return r


def fetch(url, req, headers=None):
    name, method, path, params, body, raw_query = req
    api = apitest.Api(url)
    if body is not None:
        if "?" in path:
            path, raw_query = path.split("?", 1)
        st, h, b = api.call(method, path, body=body, raw_query=raw_query, headers=headers)
    elif method == "HEAD":
        st, h, b = api.call(method, path, params, headers=headers)
    else:
        st, h, b = api.call(method, path, params, headers=headers)
    ct = h.get("Content-Type")
    allow = h.get("Allow")
    return st, ct, allow, b


def compare(f, purl, kurl, reqs, tag=""):
    n = 0
    for req in reqs:
        name = tag + req[0]
        p = fetch(purl, req)
        k = fetch(kurl, req)
        n += 1
        if p == k:
            continue
        if name in KNOWN:
            continue
        if name.replace(" [POST]", "") in LOOSE:
            pe = json.loads(p[3]).get("errorType") if p[1] == "application/json" else None
            ke = json.loads(k[3]).get("errorType") if k[1] == "application/json" else None
            f.check(p[:3] == k[:3] and pe == ke, f"{name}: prometheus {p[:3]} {pe}, kelvin {k[:3]} {ke}")
            continue
        f.check(False, f"{name}:\n    prometheus {p[0]} {p[1]} allow={p[2]} {p[3][:700]!r}\n"
                       f"    kelvin     {k[0]} {k[1]} allow={k[2]} {k[3][:700]!r}")
    return n


def shape(v):
    if isinstance(v, dict):
        return {k: shape(x) for k, x in v.items()}
    if isinstance(v, list):
        return [shape(v[0])] if v else []
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return "number"
    return type(v).__name__


def compare_status(f, purl, kurl):
    for path, exact_keys in (("/api/v1/status/buildinfo", True), ("/api/v1/status/runtimeinfo", True),
                             ("/api/v1/status/tsdb", True), ("/api/v1/status/flags", False),
                             ("/api/v1/status/config", True), ("/api/v1/status/walreplay", True)):
        ps, _, pb = apitest.Api(purl).get(path)
        ks, _, kb = apitest.Api(kurl).get(path)
        if not f.check(ps == ks == 200, f"{path}: prometheus {ps}, kelvin {ks}"):
            continue
        pd, kd = json.loads(pb), json.loads(kb)
        if exact_keys:
            f.check(list(pd) == list(kd) and shape(pd["data"]) == shape(kd["data"]) and
                    list(pd["data"]) == list(kd["data"]),
                    f"{path} shape: prometheus {shape(pd)}, kelvin {shape(kd)}")
        else:
            missing = sorted(k for k in kd["data"] if k not in pd["data"] and not k.startswith(("scrape.threads", "query.threads",
                             "web.max-request-size", "storage.tsdb.wal-sync", "storage.tsdb.out-of-order",
                             "storage.tsdb.wal-checkpoint-size", "storage.remote.max-wal-hold")))
            f.check(not missing, f"{path}: kelvin flags Prometheus does not have: {missing}")
            for k in ("query.lookback-delta", "query.timeout", "query.max-concurrency", "query.max-samples",
                      "web.enable-admin-api", "storage.tsdb.retention.size", "storage.tsdb.min-block-duration"):
                f.check(pd["data"].get(k) == kd["data"].get(k),
                        f"flag {k}: prometheus {pd['data'].get(k)!r}, kelvin {kd['data'].get(k)!r}")
    # stats: timings differ by nature, the shape must not
    for path, params in (("/api/v1/query", [("query", "temp"), ("time", str(T0 + 100)), ("stats", "all")]),
                         ("/api/v1/query_range", [("query", "temp"), ("start", str(T0)), ("end", str(T0 + 60)),
                                                  ("step", "15"), ("stats", "1")])):
        ps, _, pb = apitest.Api(purl).get(path, params)
        ks, _, kb = apitest.Api(kurl).get(path, params)
        pd, kd = (json.loads(pb) if ps == 200 else {}), (json.loads(kb) if ks == 200 else {})
        f.check(ps == ks == 200 and shape(pd) == shape(kd) and json.dumps(shape(pd)) == json.dumps(shape(kd)),
                f"{path} stats: prometheus {ps} {shape(pd)}, kelvin {ks} {shape(kd)}")
        if ps == ks == 200:
            f.check(pd["data"]["result"] == kd["data"]["result"], f"{path} stats: results differ")
    # the cardinality lists of the head: both heads are empty (backfilled data lives in blocks)
    pd = json.loads(apitest.Api(purl).get("/api/v1/status/tsdb")[2])["data"]
    kd = json.loads(apitest.Api(kurl).get("/api/v1/status/tsdb")[2])["data"]
    f.check(pd == kd, f"status/tsdb: prometheus {pd}, kelvin {kd}")


def compare_compression(f, purl, kurl):
    import urllib.request
    for enc, dec in (("gzip", gzip.decompress), ("deflate", zlib.decompress), ("br, deflate", zlib.decompress),
                     ("gzip;q=0.5", None)):
        out = []
        for url in (purl, kurl):
            req = urllib.request.Request(url + "/api/v1/labels", headers={"Accept-Encoding": enc})
            with urllib.request.urlopen(req, timeout=10) as r:
                raw, ce = r.read(), r.headers.get("Content-Encoding")
            out.append((ce, (dec(raw) if dec and ce else raw).decode()))
        f.check(out[0] == out[1], f"Accept-Encoding {enc}: prometheus {out[0]}, kelvin {out[1]}")


def compare_admin(f, purl, kurl):
    reqs = [
        ("delete no match", "POST", "/api/v1/admin/tsdb/delete_series", [], None, None),
        ("delete bad escape", "POST", "/api/v1/admin/tsdb/delete_series", [], "match[]=temp&x=%zz", None),
        ("delete bad matcher", "PUT", "/api/v1/admin/tsdb/delete_series", [("match[]", "temp{")], None, None),
        *((f"delete bad selector {sel!r}", "POST", "/api/v1/admin/tsdb/delete_series", [("match[]", sel)], None,
           None) for sel in ("rate(temp[1m])", "temp offset 5m", "temp bar", '{a=~"a)|(b"}', '{a=~"\x00("}',
                             "", "sum(temp)", '{a="b",,}', "temp$", '{a=~"' + "x" * 3000 + ')|("}')),
        ("delete second bad", "POST", "/api/v1/admin/tsdb/delete_series",
         [("match[]", 'temp{gpu="nope"}'), ("match[]", "temp[1m]")], None, None),
        ("delete bad start", "POST", "/api/v1/admin/tsdb/delete_series", [("match[]", "temp"), ("start", "x")],
         None, None),
        ("snapshot bad skip_head", "POST", "/api/v1/admin/tsdb/snapshot", [("skip_head", "x")], None, None),
        ("delete", "POST", "/api/v1/admin/tsdb/delete_series",
         [("match[]", 'temp{gpu="0"}'), ("match[]", "odd"), ("start", str(T0)), ("end", str(T0 + 3600))], None,
         None),
        ("clean", "POST", "/api/v1/admin/tsdb/clean_tombstones", [], None, None),
    ]
    compare(f, purl, kurl, reqs, "admin: ")
    after = []
    for t in (T0 + 300, T0 + 1800, T0 + 3700, T0 + 9000):
        after.append((f"after delete query at {t}", "GET", "/api/v1/query", [("query", "temp"), ("time", str(t))],
                      None, None))
        after.append((f"after delete query odd at {t}", "GET", "/api/v1/query", [("query", "odd"), ("time", str(t))],
                      None, None))
    after.append(("after delete series", "GET", "/api/v1/series", [("match[]", '{__name__=~"temp|odd"}')], None, None))
    after.append(("after delete range", "GET", "/api/v1/query_range",
                  [("query", "temp"), ("start", str(T0 + 3000)), ("end", str(T0 + 4200)), ("step", "60")], None,
                  None))
    compare(f, purl, kurl, after, "admin: ")


def main():
    f = kt.Failures()
    work = tempfile.mkdtemp(prefix="kelvin-api-compat-")
    try:
        for b in (PROMTOOL, PROMETHEUS):
            if not os.path.exists(b):
                raise AssertionError(f"{b} not found: run scripts/peers to fetch Prometheus 2.42")
        om = os.path.join(work, "data.om")
        apitest.write_dataset(om)
        pdir, kdir = os.path.join(work, "prom"), os.path.join(work, "kelvin")
        backfill(PROMTOOL, om, pdir)
        backfill(kt.KELVIN, om, kdir)
        pproc, purl = start_prometheus(work, pdir)
        kproc, kurl = apitest.start_server(work, "kelvin", kdir, "--web.enable-admin-api")
        n = compare(f, purl, kurl, requests())
        compare_status(f, purl, kurl)
        compare_compression(f, purl, kurl)
        compare_admin(f, purl, kurl)
        print(f"api_compat: {n} requests compared")
    finally:
        kt.stop_all()
        shutil.rmtree(work, ignore_errors=True)
        f.finish("api_compat")


if __name__ == "__main__":
    main()
