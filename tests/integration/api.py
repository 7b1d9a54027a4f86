#!/usr/bin/python3
"""Prometheus's HTTP API on `kelvin server`, end to end, and `kelvin query`.

A deterministic OpenMetrics file (write_dataset: counters over 3 h, so
two blocks; gauges at .250 s timestamps; NaN, +Inf, -Inf, 1e-7, 1e22 and
-0 values; a label value full of characters JSON must escape) is
backfilled with `kelvin tsdb create-blocks-from openmetrics`, then a
server is started on it and every endpoint is exercised; expected answers
are computed here from the generated data and from Prometheus 2.42's rules
(value and timestamp formatting, error texts), never taken from kelvin:

- query and query_range: vector, matrix, scalar and string shapes, byte
  for byte; time as Unix seconds (with fractions) and RFC 3339 (with
  fractions and zones) give the same answers; GET and POST form bodies
  give the same answers; step as seconds and as a duration; stats=all;
  every parameter error with its status code, errorType and text; the
  11,000-points limit; timeout handling;
- series, labels, label/<name>/values: with and without match[] (repeated,
  and split between the URL and the body), start/end filtering, errors;
- query_exemplars (no exemplar storage: [] or 204), metadata and
  targets/metadata (on a server scraping itself: match_target parsed as
  PromQL, limit checked per target, metric compared whole), status
  (buildinfo, config, flags, runtimeinfo, tsdb), rules/alerts, 404, 405
  with Allow, OPTIONS, gzip and deflate;
- admin: disabled (500 unavailable) and enabled (delete_series removes the
  samples, 204; clean_tombstones 204; snapshot's errors);
- the calls Grafana's Prometheus data source makes, as it makes them
  (POST form bodies, its parameters), health check `1+1` included;
- `kelvin query`: table and JSON output, instant and range, and promtool's
  error messages and exit codes.

tests/compat/api_compat.py imports write_dataset from here and compares
kelvin with the real Prometheus 2.42 on the same data.
"""
import decimal
import gzip
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse
import zlib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import kelvintest as kt  # noqa: E402

T0 = 1699999200  # a multiple of 2 h: the data starts at a block boundary
STEP = 15
SCRAPES = 720  # 3 h
ODD = 'a\x01b\x08c\x0cd<e>&\u2028f\nq"r\\é'
SPECIAL = [("nan", math.nan, "NaN"), ("pinf", math.inf, "+Inf"), ("ninf", -math.inf, "-Inf"),
           ("tiny", 1e-7, "1e-07"), ("huge", 1e22, "1e+22"), ("negzero", -0.0, "-0"),
           ("exact", 123456789.125, "123456789.125"), ("tenth", 0.1, "0.1")]


# ---- the data -----------------------------------------------------------------

def om_escape(v):
    return v.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def om_value(v):
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    return repr(v)


def series_data():
    """{labels tuple (sorted pairs, __name__ included): [(ms, value), ...]}"""
    out = {}
    k = 0
    for job in ("api", "web"):
        for inst in ("a:1", "b:2"):
            for code in ("200", "500"):
                k += 1
                ls = (("__name__", "http_requests_total"), ("code", code), ("instance", inst), ("job", job))
                out[ls] = [((T0 + STEP * i) * 1000, float(i * k)) for i in range(SCRAPES)]
    for gpu in (0, 1):
        ls = (("__name__", "temp"), ("gpu", str(gpu)), ("host", "n1"))
        out[ls] = [((T0 + STEP * i) * 1000 + 250, 40.5 + (i % 7) + gpu) for i in range(SCRAPES)]
    out[(("__name__", "odd"), ("v", ODD))] = [((T0 + STEP * i) * 1000, 1.0) for i in range(40)]
    for kind, v, _ in SPECIAL:
        out[(("__name__", "special"), ("kind", kind))] = [((T0 + STEP * i) * 1000, v) for i in range(40)]
    return out


def write_dataset(path):
    data = series_data()
    lines = []
    names = []
    for ls in data:
        if ls[0][1] not in names:
            names.append(ls[0][1])
    for name in names:
        lines.append(f"# TYPE {name} gauge")
        for ls, samples in data.items():
            if ls[0][1] != name:
                continue
            lab = ",".join(f'{k}="{om_escape(v)}"' for k, v in ls[1:])
            for ms, v in samples:
                ts = f"{ms // 1000}.{ms % 1000:03d}" if ms % 1000 else str(ms // 1000)
                lines.append(f"{name}{{{lab}}} {om_value(v)} {ts}")
    lines.append("# EOF")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    return data


# ---- Go's formatting (what 2.42 writes) --------------------------------------

def digits_of(v):
    """Shortest round-trip digits and exponent: v = 0.D x 10^(e)."""
    sign, digits, exp = decimal.Decimal(repr(abs(v))).as_tuple()
    digits = list(digits)
    while len(digits) > 1 and digits[-1] == 0:
        digits.pop()
        exp += 1
    return "".join(map(str, digits)), exp + len(digits)


def fmt_f(v):
    """strconv.FormatFloat(v, 'f', -1, 64)"""
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    neg = "-" if math.copysign(1, v) < 0 else ""
    if v == 0:
        return neg + "0"
    d, e = digits_of(v)
    if e <= 0:
        return neg + "0." + "0" * (-e) + d
    if len(d) <= e:
        return neg + d + "0" * (e - len(d))
    return neg + d[:e] + "." + d[e:]


def fmt_e(v):
    """strconv.FormatFloat(v, 'e', -1, 64)"""
    neg = "-" if v < 0 else ""
    d, e = digits_of(v)
    x = e - 1
    m = d[0] + ("." + d[1:] if len(d) > 1 else "")
    return f"{neg}{m}e{'-' if x < 0 else '+'}{abs(x):02d}"


def marshal_value(v):
    """Prometheus's marshalValue (without the quotes)."""
    if not math.isnan(v) and not math.isinf(v) and v != 0 and (abs(v) < 1e-6 or abs(v) >= 1e21):
        return fmt_e(v)
    return fmt_f(v)


def marshal_ts(ms):
    """Prometheus's marshalTimestamp."""
    s = "-" if ms < 0 else ""
    ms = abs(ms)
    s += str(ms // 1000)
    if ms % 1000:
        s += f".{ms % 1000:03d}"
    return s


def go_json_str(s):
    """encoding/json's string (HTML-escaped)."""
    out = ['"']
    for ch in s:
        o = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif o < 0x20 or ch in "<>&" or o in (0x2028, 0x2029):
            out.append(f"\\u{o:04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def json_labels(ls):
    return "{" + ",".join(f"{go_json_str(k)}:{go_json_str(v)}" for k, v in ls) + "}"


def success(data):
    return '{"status":"success","data":' + data + "}"


def error(typ, msg):
    return '{"status":"error","errorType":' + go_json_str(typ) + ',"error":' + go_json_str(msg) + "}"


# ---- talking to the server ----------------------------------------------------

class Api:
    def __init__(self, url):
        self.url = url

    def call(self, method, path, params=(), body=None, headers=None, raw_query=None):
        """Returns (status, headers, body text). params: list of pairs
        (the URL's for GET, the form body's for POST unless body is given)."""
        q = raw_query if raw_query is not None else urllib.parse.urlencode(list(params))
        hdrs = dict(headers or {})
        data = None
        if method in ("POST", "PUT") and body is None and raw_query is None:
            data = q.encode()
            q = ""
            hdrs.setdefault("Content-Type", "application/x-www-form-urlencoded")
        elif body is not None:
            data = body.encode() if isinstance(body, str) else body
            hdrs.setdefault("Content-Type", "application/x-www-form-urlencoded")
        url = self.url + path + ("?" + q if q else "")
        st, h, b = kt.http(url, method=method, data=data, headers=hdrs, timeout=30)
        return st, h, b.decode("utf-8", "replace")

    def get(self, path, params=()):
        return self.call("GET", path, params)

    def post(self, path, params=()):
        return self.call("POST", path, params)


def sel_value(samples, t_ms, lookback_ms=300000):
    """The instant-vector selector's value at t (2.42: the newest sample at
    or before t, not older than t - lookback)."""
    best = None
    for ms, v in samples:
        if ms <= t_ms and ms >= t_ms - lookback_ms:
            best = v
    return best


class Checker(kt.Failures):
    def eq(self, got, want, what):
        return self.check(got == want, f"{what}:\n    got  {got!r}\n    want {want!r}")

    def answer(self, resp, status, body, what):
        st, _, b = resp
        self.check(st == status and b == body, f"{what}: got {st} {b[:600]!r}\n    want {status} {body[:600]!r}")


def start_server(work, name, data_dir, *flags, scrape_self=False):
    cfg = os.path.join(work, name + ".yml")
    port = kt.free_port()
    with open(cfg, "w") as f:
        if scrape_self:
            f.write("global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: self\n    static_configs:\n"
                    f"      - targets: ['127.0.0.1:{port}']\n")
        else:
            f.write("global:\n  scrape_interval: 15s\nscrape_configs: []\n")
    log = os.path.join(work, name + ".log")
    p = kt.start([kt.KELVIN, "server", f"--storage.tsdb.path={data_dir}", f"--config.file={cfg}",
                  f"--web.listen-address=127.0.0.1:{port}", *flags], log=log)
    url = f"http://127.0.0.1:{port}"
    kt.wait_http(url + "/-/ready", proc=p)
    return p, url


# ---- the checks ---------------------------------------------------------------

def check_queries(f, api, data):
    temp = [(ls, s) for ls, s in data.items() if ls[0][1] == "temp"]
    # instant vector at a fractional time, four spellings of the same time
    t = T0 + 100.5
    t_ms = int(t * 1000)
    want = success('{"resultType":"vector","result":[' + ",".join(
        '{"metric":' + json_labels(ls) + ',"value":[' + marshal_ts(t_ms) + ',"' + marshal_value(sel_value(s, t_ms))
        + '"]}' for ls, s in temp) + "]}")
    for tv in ("1699999300.5", "2023-11-14T22:01:40.5Z", "2023-11-14T23:01:40.500+01:00",
               "2023-11-14T22:01:40,5Z", "1_699_999_300.5"):
        f.answer(api.get("/api/v1/query", [("query", "temp"), ("time", tv)]), 200, want, f"query temp time={tv}")
        f.answer(api.post("/api/v1/query", [("query", "temp"), ("time", tv)]), 200, want,
                 f"POST query temp time={tv}")
    # a time that rounds to the millisecond as Go does
    f.answer(api.get("/api/v1/query", [("query", "temp"), ("time", "1699999300.5004")]), 200, want,
             "time rounded to ms")
    # values as marshalValue writes them
    t_ms = (T0 + 300) * 1000
    sp = sorted((ls, s) for ls, s in data.items() if ls[0][1] == "special")
    want = success('{"resultType":"vector","result":[' + ",".join(
        '{"metric":' + json_labels(ls) + ',"value":[' + marshal_ts(t_ms) + ',"' + marshal_value(sel_value(s, t_ms))
        + '"]}' for ls, s in sp) + "]}")
    f.answer(api.get("/api/v1/query", [("query", "special"), ("time", str(T0 + 300))]), 200, want,
             "special values")
    odd = [(ls, s) for ls, s in data.items() if ls[0][1] == "odd"]
    want = success('{"resultType":"vector","result":[{"metric":' + json_labels(odd[0][0]) + ',"value":['
                   + marshal_ts(t_ms) + ',"1"]}]}')
    f.answer(api.get("/api/v1/query", [("query", "odd"), ("time", str(T0 + 300))]), 200, want, "escaped labels")
    # matrix from a range selector (timestamps keep their .250)
    t_ms = (T0 + 100) * 1000
    want = success('{"resultType":"matrix","result":[' + ",".join(
        '{"metric":' + json_labels(ls) + ',"values":[' + ",".join(
            "[" + marshal_ts(ms) + ',"' + marshal_value(v) + '"]' for ms, v in s if t_ms - 60000 <= ms <= t_ms)
        + "]}" for ls, s in temp) + "]}")
    f.answer(api.get("/api/v1/query", [("query", "temp[1m]"), ("time", str(T0 + 100))]), 200, want,
             "range selector")
    # scalars: float timestamps, 'f' values
    for q, v in (("1e-7", "0.0000001"), ("1e22", "10000000000000000000000"), ("-0.5", "-0.5"),
                 ("0x10", "16"), ("Inf", "+Inf"), ("NaN", "NaN")):
        f.answer(api.get("/api/v1/query", [("query", q), ("time", "1699999200.25")]), 200,
                 success('{"resultType":"scalar","result":[1699999200.25,"' + v + '"]}'), f"scalar {q}")
    f.answer(api.get("/api/v1/query", [("query", "1"), ("time", "-1.5")]), 200,
             success('{"resultType":"scalar","result":[-1.5,"1"]}'), "negative time")
    f.answer(api.get("/api/v1/query", [("query", '"a<b>&\\u2028"'), ("time", "5")]), 200,
             success('{"resultType":"string","result":[5,"a\\u003cb\\u003e\\u0026\\u2028"]}'), "string")
    f.answer(api.get("/api/v1/query", [("query", "1+1"), ("time", "1")]), 200,
             success('{"resultType":"scalar","result":[1,"2"]}'), "1+1")
    # stats
    st, _, b = api.get("/api/v1/query", [("query", "temp"), ("time", str(T0 + 100)), ("stats", "all")])
    d = json.loads(b) if st == 200 else {}
    stats = d.get("data", {}).get("stats", {})
    f.check(list(stats) == ["timings", "samples"] and list(stats.get("timings", {})) == [
        "evalTotalTime", "resultSortTime", "queryPreparationTime", "innerEvalTime", "execQueueTime",
        "execTotalTime"] and list(stats.get("samples", {})) == ["totalQueryableSamples", "peakSamples"],
        f"stats=all shape: {b[:400]}")
    f.check(stats.get("samples", {}).get("totalQueryableSamples", 0) >= 2, f"stats samples: {b[:400]}")
    # default time is now: the data is long past, so nothing within the lookback
    f.answer(api.get("/api/v1/query", [("query", "temp")]), 200,
             success('{"resultType":"vector","result":[]}'), "query at now")
    # range queries
    for step in ("15", "15s", "15000ms", "15.0", "1.5e1"):
        want = success('{"resultType":"matrix","result":[' + ",".join(
            '{"metric":' + json_labels(ls) + ',"values":[' + ",".join(
                "[" + marshal_ts((T0 + k * 15) * 1000) + ',"' + marshal_value(sel_value(s, (T0 + k * 15) * 1000))
                + '"]' for k in range(1, 9)) + "]}" for ls, s in temp) + "]}")
        for m in ("GET", "POST"):
            f.answer(api.call(m, "/api/v1/query_range", [("query", "temp"), ("start", str(T0 + 15)),
                                                         ("end", "2023-11-14T22:02:00Z"), ("step", step)]),
                     200, want, f"{m} query_range step={step}")
    f.answer(api.get("/api/v1/query_range", [("query", "1"), ("start", "0"), ("end", "3"), ("step", "1.5")]), 200,
             success('{"resultType":"matrix","result":[{"metric":{},"values":[[0,"1"],[1.500,"1"],[3,"1"]]}]}'),
             "query_range of a scalar, fractional step")
    # a request's timeout: the watchdog stops a slow query (about 9 M samples)
    st, _, b = api.get("/api/v1/query", [("query", "sum(count_over_time(http_requests_total[3h:10ms]))"),
                                         ("time", str(T0 + 10800)), ("timeout", "1ms")])
    d = json.loads(b) if b.startswith("{") else {}
    f.check(st == 503 and d.get("errorType") == "timeout" and d.get("error", "").startswith("query timed out in "),
            f"timeout=1ms: {st} {b[:300]}")
    n = 11000
    st, _, b = api.get("/api/v1/query_range", [("query", "1"), ("start", "0"), ("end", str(n)), ("step", "1")])
    f.check(st == 200 and b.endswith(f'[{n},"1"]]}}]}}}}'), f"11000 points accepted: {st} {b[-80:]}")


def check_query_errors(f, api):
    bad = "bad_data"
    cases = [
        ("/api/v1/query", [("query", "1+"), ("time", "1")], 400, bad,
         'invalid parameter "query": 1:3: parse error: unexpected end of input'),
        ("/api/v1/query", [("time", "1")], 400, bad,
         'invalid parameter "query": 1:1: parse error: no expression found in input'),
        ("/api/v1/query", [("query", "1"), ("time", "x")], 400, bad,
         "invalid parameter \"time\": Invalid time value for 'time': cannot parse \"x\" to a valid timestamp"),
        ("/api/v1/query", [("query", "1"), ("time", "2023-02-30T00:00:00Z")], 400, bad,
         "invalid parameter \"time\": Invalid time value for 'time': cannot parse \"2023-02-30T00:00:00Z\" "
         "to a valid timestamp"),
        ("/api/v1/query", [("query", "1"), ("time", "2023-01-02T03:04:05.1234567891Z")], 400, bad,
         "invalid parameter \"time\": Invalid time value for 'time': cannot parse "
         "\"2023-01-02T03:04:05.1234567891Z\" to a valid timestamp"),
        ("/api/v1/query", [("query", "1"), ("time", "0x10")], 400, bad,
         "invalid parameter \"time\": Invalid time value for 'time': cannot parse \"0x10\" to a valid timestamp"),
        ("/api/v1/query", [("query", "1"), ("timeout", "abc")], 400, bad,
         'invalid parameter "timeout": cannot parse "abc" to a valid duration'),
        ("/api/v1/query", [("query", "1"), ("timeout", "0")], 503, "timeout", "query timed out in query execution"),
        ("/api/v1/query_range", [("query", "1"), ("end", "2"), ("step", "1")], 400, bad,
         'invalid parameter "start": cannot parse "" to a valid timestamp'),
        ("/api/v1/query_range", [("query", "1"), ("start", "2"), ("step", "1")], 400, bad,
         'invalid parameter "end": cannot parse "" to a valid timestamp'),
        ("/api/v1/query_range", [("query", "1"), ("start", "2"), ("end", "3")], 400, bad,
         'invalid parameter "step": cannot parse "" to a valid duration'),
        ("/api/v1/query_range", [("query", "1"), ("start", "1"), ("end", "0"), ("step", "1")], 400, bad,
         'invalid parameter "end": end timestamp must not be before start time'),
        ("/api/v1/query_range", [("query", "1"), ("start", "1"), ("end", "2"), ("step", "0")], 400, bad,
         'invalid parameter "step": zero or negative query resolution step widths are not accepted. '
         "Try a positive integer"),
        ("/api/v1/query_range", [("query", "1"), ("start", "1"), ("end", "2"), ("step", "-1m")], 400, bad,
         'invalid parameter "step": cannot parse "-1m" to a valid duration'),
        ("/api/v1/query_range", [("query", "1"), ("start", "1"), ("end", "2"), ("step", "nan")], 400, bad,
         'invalid parameter "step": zero or negative query resolution step widths are not accepted. '
         "Try a positive integer"),
        ("/api/v1/query_range", [("query", "1"), ("start", "1"), ("end", "2"), ("step", "9.3e9")], 400, bad,
         'invalid parameter "step": cannot parse "9.3e9" to a valid duration. It overflows int64'),
        ("/api/v1/query_range", [("query", "1"), ("start", "0"), ("end", "11001"), ("step", "1")], 400, bad,
         "exceeded maximum resolution of 11,000 points per timeseries. Try decreasing the query resolution "
         "(?step=XX)"),
        ("/api/v1/query_range", [("query", "1"), ("start", "0"), ("end", "0"), ("step", "0.0001")], 422,
         "execution", "unexpected error: runtime error: integer divide by zero"),
        ("/api/v1/query_range", [("query", "temp[1m]"), ("start", "0"), ("end", "1"), ("step", "1")], 400, bad,
         'invalid expression type "range vector" for range query, must be Scalar or instant Vector'),
        ("/api/v1/query_range", [("query", '"s"'), ("start", "0"), ("end", "1"), ("step", "1")], 400, bad,
         'invalid expression type "string" for range query, must be Scalar or instant Vector'),
        ("/api/v1/query_range", [("query", "1+"), ("start", "0"), ("end", "1"), ("step", "1")], 400, bad,
         "1:3: parse error: unexpected end of input"),
        ("/api/v1/query_range", [("query", "1"), ("start", "0"), ("end", "1"), ("step", "1"), ("timeout", "-1s")],
         400, bad, 'invalid parameter "timeout": cannot parse "-1s" to a valid duration'),
        ("/api/v1/query_exemplars", [], 400, bad, "1:1: parse error: no expression found in input"),
        ("/api/v1/query_exemplars", [("query", "temp"), ("start", "5"), ("end", "4")], 400, bad,
         "end timestamp must not be before start timestamp"),
        ("/api/v1/query_exemplars", [("query", "temp"), ("start", "y")], 400, bad,
         "invalid parameter \"start\": Invalid time value for 'start': cannot parse \"y\" to a valid timestamp"),
    ]
    for path, params, status, typ, msg in cases:
        for m in ("GET", "POST"):
            f.answer(api.call(m, path, params), status, error(typ, msg), f"{m} {path} {params}")
    f.answer(api.get("/api/v1/query_exemplars", [("query", "temp")]), 200, success("[]"), "exemplars")
    st, h, b = api.get("/api/v1/query_exemplars", [("query", "1+1")])
    f.check(st == 204 and b == "", f"exemplars without a selector: {st} {b!r}")


def check_series_labels(f, api, data):
    names = sorted({k for ls in data for k, _ in ls})
    f.answer(api.get("/api/v1/labels"), 200, success("[" + ",".join(go_json_str(n) for n in names) + "]"), "labels")
    f.answer(api.post("/api/v1/labels"), 200, success("[" + ",".join(go_json_str(n) for n in names) + "]"),
             "POST labels")
    want = success('["__name__","gpu","host"]')
    f.answer(api.get("/api/v1/labels", [("match[]", "temp")]), 200, want, "labels match[]")
    f.answer(api.get("/api/v1/labels", [("match[]", "temp"), ("match[]", 'special{kind="nan"}')]), 200,
             success('["__name__","gpu","host","kind"]'), "labels two match[]")
    f.answer(api.call("POST", "/api/v1/labels?match%5B%5D=temp", body="match[]=special"), 200,
             success('["__name__","gpu","host","kind"]'), "labels match[] in URL and body")
    metric_names = sorted({ls[0][1] for ls in data})
    want = success("[" + ",".join(go_json_str(n) for n in metric_names) + "]")
    f.answer(api.get("/api/v1/label/__name__/values"), 200, want, "__name__ values")
    f.answer(api.get("/api/v1/label/%5F%5Fname%5F%5F/values"), 200, want, "__name__ values, escaped path")
    f.answer(api.get("/api/v1/label/v/values"), 200, success("[" + go_json_str(ODD) + "]"), "escaped values")
    f.answer(api.get("/api/v1/label/job/values", [("match[]", 'http_requests_total{code="500"}')]), 200,
             success('["api","web"]'), "values match[]")
    f.answer(api.get("/api/v1/label/nope/values"), 200, success("[]"), "values of an unknown label")
    # odd and special only have data in the first block (the first 2 h; it
    # ends with the last sample there + 1 ms)
    late = str(T0 + 7200)
    want = success("[" + ",".join(go_json_str(n) for n in ["http_requests_total", "temp"]) + "]")
    f.answer(api.get("/api/v1/label/__name__/values", [("match[]", '{__name__=~".+"}'), ("start", late)]), 200, want,
             "values after start")
    # series
    allser = sorted(data)
    f.answer(api.get("/api/v1/series", [("match[]", '{__name__=~".+"}')]), 200,
             success("[" + ",".join(json_labels(ls) for ls in allser) + "]"), "all series")
    want = success("[" + ",".join(json_labels(ls) for ls in allser if ls[0][1] in ("odd", "temp")) + "]")
    for m in ("GET", "POST"):
        f.answer(api.call(m, "/api/v1/series", [("match[]", "temp"), ("match[]", "odd"), ("match[]", "temp")]), 200,
                 want, f"{m} series, repeated match[]")
    f.answer(api.call("POST", "/api/v1/series?match[]=odd", body="match%5B%5D=temp"), 200, want,
             "series match[] in URL and body")
    want = success("[" + ",".join(json_labels(ls) for ls in allser if ls[0][1] == "temp") + "]")
    f.answer(api.get("/api/v1/series", [("match[]", '{__name__=~"temp|odd"}'), ("start", "2023-11-14T23:00:00Z"),
                                        ("end", str(T0 + 7200))]), 200, want, "series start/end")
    f.answer(api.get("/api/v1/series", [("match[]", "temp"), ("start", str(T0 + 86400))]), 200, success("[]"),
             "series after the data")
    bad = "bad_data"
    cases = [
        ("/api/v1/series", [], 400, error(bad, "no match[] parameter provided")),
        ("/api/v1/series", [("match[]", "temp"), ("start", "x")], 400,
         error(bad, "invalid parameter \"start\": Invalid time value for 'start': cannot parse \"x\" to a valid "
                    "timestamp")),
        ("/api/v1/series", [("match[]", '{a=""}')], 400,
         error(bad, 'invalid parameter "match[]": match[] must contain at least one non-empty matcher')),
        ("/api/v1/series", [("match[]", "temp{")], 400,
         error(bad, 'invalid parameter "match[]": 1:6: parse error: unexpected end of input inside braces')),
        ("/api/v1/labels", [("match[]", "temp{")], 400,
         error(bad, "1:6: parse error: unexpected end of input inside braces")),
        ("/api/v1/labels", [("match[]", '{a=~".*"}')], 400,
         error(bad, "match[] must contain at least one non-empty matcher")),
        ("/api/v1/labels", [("end", "x")], 400,
         error(bad, "invalid parameter \"end\": Invalid time value for 'end': cannot parse \"x\" to a valid "
                    "timestamp")),
        ("/api/v1/label/1x/values", [], 400, error(bad, 'invalid label name: "1x"')),
        ("/api/v1/label/__name__/values", [("match[]", "temp{")], 400,
         error(bad, "1:6: parse error: unexpected end of input inside braces")),
    ]
    for path, params, status, body in cases:
        methods = ("GET",) if "/label/" in path else ("GET", "POST")
        for m in methods:
            f.answer(api.call(m, path, params), status, body, f"{m} {path} {params}")
    f.answer(api.get("/api/v1/labels", [("start", "3"), ("end", "2")]), 200, success("[]"), "labels end < start")
    # form errors, which only series and delete_series report
    f.answer(api.call("POST", "/api/v1/series", body="match[]=temp&x=%zz"), 400,
             error(bad, 'error parsing form values: invalid URL escape "%zz"'), "series body %zz")
    f.answer(api.call("POST", "/api/v1/series", body="match[]=temp&x=1;2"), 400,
             error(bad, "error parsing form values: invalid semicolon separator in query"), "series body ;")
    f.answer(api.call("POST", "/api/v1/labels", body="match[]=temp&x=%zz"), 200,
             success('["__name__","gpu","host"]'), "labels ignores form errors")


def check_http(f, api):
    st, h, b = api.call("GET", "/api/v1/nope")
    f.check(st == 404 and b == "404 page not found\n", f"unknown endpoint: {st} {b!r}")
    for method, path, allow in (("PUT", "/api/v1/query", "GET, OPTIONS, POST"),
                                ("POST", "/api/v1/label/job/values", "GET, OPTIONS"),
                                ("HEAD", "/api/v1/labels", "GET, OPTIONS, POST"),
                                ("GET", "/api/v1/admin/tsdb/delete_series", "OPTIONS, POST, PUT"),
                                ("POST", "/api/v1/status/config", "GET, OPTIONS")):
        st, h, b = api.call(method, path, body="" if method in ("PUT", "POST") else None)
        f.check(st == 405 and (method == "HEAD" or b == "Method Not Allowed\n") and h.get("Allow") == allow,
                f"{method} {path}: {st} {h.get('Allow')!r} {b!r}")
    st, h, b = api.call("OPTIONS", "/api/v1/query")
    f.check(st == 204 and b == "", f"OPTIONS: {st} {b!r}")
    f.answer(api.call("DELETE", "/api/v1/series"), 500, error("internal", "not implemented"), "DELETE series")
    for enc, dec in (("gzip", gzip.decompress), ("deflate", zlib.decompress), ("br, gzip", gzip.decompress)):
        url = api.url + "/api/v1/labels"
        import urllib.request
        req = urllib.request.Request(url, headers={"Accept-Encoding": enc})
        with urllib.request.urlopen(req, timeout=10) as r:
            raw = r.read()
            ce = r.headers.get("Content-Encoding")
        try:
            body = dec(raw).decode()
        except Exception as e:  # noqa: BLE001
            body = f"undecodable: {e}"
        f.check(ce == enc.split(", ")[-1] and body.startswith('{"status":"success"'),
                f"Accept-Encoding {enc}: {ce} {body[:80]!r}")
    st, h, b = api.call("GET", "/api/v1/labels", headers={"Accept-Encoding": "gzip;q=1"})
    f.check(st == 200 and h.get("Content-Encoding") is None, "gzip;q=1 is not Prometheus's 'gzip' token")


def check_status(f, api, data_dir):
    st, _, b = api.get("/api/v1/status/buildinfo")
    d = json.loads(b)
    f.check(st == 200 and list(d["data"]) == ["version", "revision", "branch", "buildUser", "buildDate",
                                               "goVersion"], f"buildinfo: {b}")
    st, _, b = api.get("/api/v1/status/flags")
    d = json.loads(b)["data"]
    f.check(list(d) == sorted(d), "flags sorted")
    for k, v in (("query.lookback-delta", "5m"), ("query.timeout", "2m"), ("query.max-concurrency", "20"),
                 ("query.max-samples", "50000000"), ("storage.tsdb.path", data_dir),
                 ("storage.tsdb.retention.time", "15d"), ("storage.tsdb.retention.size", "1GiB512MiB"),
                 ("web.enable-admin-api", "false"), ("web.config.file", "")):
        f.eq(d.get(k), v, f"flag {k}")
    st, _, b = api.get("/api/v1/status/runtimeinfo")
    d = json.loads(b)["data"]
    f.check(list(d) == ["startTime", "CWD", "reloadConfigSuccess", "lastConfigTime", "corruptionCount",
                        "goroutineCount", "GOMAXPROCS", "GOGC", "GODEBUG", "storageRetention"], f"runtimeinfo {b}")
    f.eq(d.get("storageRetention"), "15d or 1GiB512MiB", "storageRetention")
    f.check(d.get("reloadConfigSuccess") is True and d.get("goroutineCount", 0) > 1 and d.get("GOMAXPROCS", 0) >= 1
            and d.get("startTime", "").endswith("Z") and d.get("lastConfigTime", "").endswith("Z"),
            f"runtimeinfo values {d}")
    st, _, b = api.get("/api/v1/status/tsdb")
    d = json.loads(b)["data"]
    f.check(list(d) == ["headStats", "seriesCountByMetricName", "labelValueCountByLabelName",
                        "memoryInBytesByLabelName", "seriesCountByLabelValuePair"] and
            list(d["headStats"]) == ["numSeries", "numLabelPairs", "chunkCount", "minTime", "maxTime"],
            f"status/tsdb shape {b}")
    st, _, b = api.get("/api/v1/status/config")
    f.check(st == 200 and json.loads(b)["data"]["yaml"].startswith("global:"), f"config {b[:100]}")
    f.answer(api.get("/api/v1/rules"), 200, success('{"groups":[]}'), "rules")
    f.answer(api.get("/api/v1/rules", [("type", "Bad")]), 400,
             error("bad_data", 'invalid parameter "type": not supported value "bad"'), "rules type")
    f.answer(api.get("/api/v1/alerts"), 200, success('{"alerts":[]}'), "alerts")
    f.answer(api.get("/api/v1/metadata"), 200, success("{}"), "metadata without targets")
    f.answer(api.get("/api/v1/metadata", [("limit", "x")]), 400, error("bad_data", "limit must be a number"),
             "metadata limit")
    f.answer(api.get("/api/v1/targets/metadata"), 200, success("[]"), "targets/metadata")
    # the engine's own figures, after the queries checked before this
    st, _, b = api.get("/metrics")
    vals = {}
    for line in b.splitlines():
        if line.startswith("kelvin_engine_"):
            name, _, v = line.rpartition(" ")
            vals[name] = float(v)
    f.check(vals.get("kelvin_engine_queries_total", 0) >= 10 and vals.get("kelvin_engine_queries_failed_total", 0) >= 1
            and vals.get("kelvin_engine_queries") == 0 and "kelvin_engine_block_cache_bytes" in vals,
            f"engine metrics {vals}")


def check_grafana(f, api, data):
    """The requests Grafana's Prometheus data source sends (POST by default)."""
    temp = sorted(ls for ls in data if ls[0][1] == "temp")
    form = {"Content-Type": "application/x-www-form-urlencoded", "X-Grafana-Org-Id": "1"}
    st, _, b = api.call("POST", "/api/v1/query", body="query=1%2B1&time=1700000000", headers=form)
    f.check(st == 200 and json.loads(b)["data"] == {"resultType": "scalar", "result": [1700000000, "2"]},
            f"grafana health check: {st} {b}")
    st, _, b = api.call("POST", "/api/v1/query_range",
                        body=f"query=temp&start={T0}&end={T0 + 3600}&step=60", headers=form)
    d = json.loads(b)["data"] if st == 200 else {}
    want = [{"metric": dict(ls), "values": [[T0 + k, marshal_value(sel_value(data[ls], (T0 + k) * 1000))]
                                            for k in range(0, 3601, 60) if sel_value(data[ls], (T0 + k) * 1000)]}
            for ls in temp]
    f.check(d == {"resultType": "matrix", "result": want}, f"grafana query_range: {st} {b[:200]}")
    st, _, b = api.get("/api/v1/labels", [("start", str(T0)), ("end", str(T0 + 3600))])
    f.check(st == 200 and "gpu" in json.loads(b)["data"], f"grafana labels: {b[:200]}")
    st, _, b = api.get("/api/v1/label/__name__/values", [("start", str(T0)), ("end", str(T0 + 3600))])
    f.check(st == 200 and "temp" in json.loads(b)["data"], f"grafana metric names: {b[:200]}")
    st, _, b = api.call("POST", "/api/v1/series",
                        body=f"match%5B%5D=temp&start={T0}&end={T0 + 3600}", headers=form)
    f.check(st == 200 and json.loads(b)["data"] == [dict(ls) for ls in temp], f"grafana series: {b[:200]}")
    st, _, b = api.get("/api/v1/label/gpu/values", [("match[]", "temp"), ("start", str(T0)), ("end", str(T0 + 60))])
    f.check(st == 200 and json.loads(b)["data"] == ["0", "1"], f"grafana template variable: {b[:200]}")
    st, _, b = api.get("/api/v1/metadata")
    f.check(st == 200 and json.loads(b)["status"] == "success", f"grafana metadata: {b[:200]}")
    st, _, b = api.get("/api/v1/status/buildinfo")
    f.check(st == 200 and json.loads(b)["data"]["version"], f"grafana buildinfo: {b[:200]}")
    st, _, b = api.call("POST", "/api/v1/query_exemplars", body=f"query=temp&start={T0}&end={T0 + 60}",
                        headers=form)
    f.check(st == 200 and json.loads(b)["data"] == [], f"grafana exemplars: {b[:200]}")


def check_live_head(f, api):
    """A server scraping itself: the head's figures and the query of `up`."""
    deadline = time.time() + 30
    res = []
    while time.time() < deadline:
        st, _, b = api.get("/api/v1/query", [("query", 'up{job="self"}')])
        res = json.loads(b)["data"]["result"] if st == 200 else []
        if res:
            break
        time.sleep(0.2)
    f.check(len(res) == 1 and res[0]["value"][1] == "1", f"up of the server itself: {res}")
    st, _, b = api.get("/api/v1/status/tsdb")
    d = json.loads(b)["data"]
    hs = d["headStats"]
    f.check(hs["numSeries"] > 10 and hs["numLabelPairs"] > 10 and hs["chunkCount"] >= hs["numSeries"] and
            0 < hs["minTime"] <= hs["maxTime"], f"status/tsdb headStats with a live head: {hs}")
    for key in ("seriesCountByMetricName", "labelValueCountByLabelName", "memoryInBytesByLabelName",
                "seriesCountByLabelValuePair"):
        lst = d[key]
        vals = [e["value"] for e in lst]
        f.check(0 < len(lst) <= 10 and vals == sorted(vals, reverse=True) and
                all(list(e) == ["name", "value"] for e in lst), f"status/tsdb {key}: {lst}")
    f.check({"name": "job=self", "value": hs["numSeries"]} in d["seriesCountByLabelValuePair"],
            f"every head series has job=self: {d['seriesCountByLabelValuePair']}")
    st, _, b = api.get("/api/v1/metadata", [("metric", "kelvin_build_info")])
    f.check(st == 200 and list(json.loads(b)["data"]) == ["kelvin_build_info"], f"metadata: {b[:200]}")
    # targets/metadata as 2.42: the limit is checked before each target, so
    # limit=1 gives the one target's whole list; limit=0 gives nothing;
    # match_target is parsed by the PromQL parser (comments are blanks);
    # metric is compared whole (a NUL byte counts)
    for sel in ('{job="self"}', '#c\n{job="self"}', '{job="self"} #c', '{job=~"s.*", nope=""}'):
        st, _, b = api.get("/api/v1/targets/metadata", [("match_target", sel), ("limit", "1")])
        d = json.loads(b)["data"] if st == 200 else []
        names = [e.get("metric") for e in d]
        f.check(len(d) > 1 and all(e["target"]["job"] == "self" for e in d) and len(set(names)) == len(names)
                and "kelvin_build_info" in names, f"targets/metadata {sel!r} limit=1: {st} {b[:300]}")
    for sel in ('{job="nope"}', 'up{job="self"}'):  # a target has no __name__: it reads as ""
        f.answer(api.get("/api/v1/targets/metadata", [("match_target", sel)]), 200, success("[]"),
                 f"targets/metadata {sel!r} matches no target")
    f.answer(api.get("/api/v1/targets/metadata", [("limit", "0")]), 200, success("[]"), "targets/metadata limit=0")
    st, _, b = api.get("/api/v1/targets/metadata", [("metric", "kelvin_build_info")])
    d = json.loads(b)["data"] if st == 200 else []
    f.check(len(d) == 1 and "metric" not in d[0] and d[0]["type"] == "gauge", f"targets/metadata metric: {b[:300]}")
    f.answer(api.get("/api/v1/targets/metadata", [("metric", "kelvin_build_info\x00")]), 200, success("[]"),
             "targets/metadata metric with a NUL byte")
    f.answer(api.get("/api/v1/metadata", [("limit", "0")]), 200, success("{}"), "metadata limit=0")
    st, _, b = api.get("/api/v1/metadata", [("limit", "1")])
    f.check(st == 200 and len(json.loads(b)["data"]) == 1, f"metadata limit=1: {b[:300]}")
    f.answer(api.get("/api/v1/metadata", [("metric", "kelvin_build_info\x00")]), 200, success("{}"),
             "metadata metric with a NUL byte")


def check_admin(f, work, data_dir, data, api_noadmin, noadmin_proc):
    for path in ("delete_series", "clean_tombstones", "snapshot"):
        f.answer(api_noadmin.call("POST", "/api/v1/admin/tsdb/" + path, [("match[]", "temp")]), 500,
                 error("unavailable", "admin APIs disabled"), f"{path} without the admin API")
    kt.stop(noadmin_proc)
    p, url = start_server(work, "admin", data_dir, "--web.enable-admin-api")
    api = Api(url)
    bad = "bad_data"
    f.answer(api.call("POST", "/api/v1/admin/tsdb/delete_series"), 400, error(bad, "no match[] parameter provided"),
             "delete without match[]")
    f.answer(api.call("POST", "/api/v1/admin/tsdb/delete_series", body="match[]=temp&x=%zz"), 400,
             error(bad, 'error parsing form values: invalid URL escape "%zz"'), "delete with a bad escape")
    f.answer(api.call("PUT", "/api/v1/admin/tsdb/delete_series", [("match[]", "temp{")]), 400,
             error(bad, 'invalid parameter "match[]": 1:6: parse error: unexpected end of input inside braces'),
             "delete with a bad matcher")
    f.answer(api.call("POST", "/api/v1/admin/tsdb/snapshot", [("skip_head", "x")]), 400,
             error(bad, 'invalid parameter "skip_head": unable to parse boolean: strconv.ParseBool: parsing "x": '
                        "invalid syntax"), "snapshot skip_head")
    # delete gpu 0's temp over the first hour: its earlier samples go
    st, _, b = api.call("POST", "/api/v1/admin/tsdb/delete_series",
                        [("match[]", 'temp{gpu="0"}'), ("start", str(T0)), ("end", str(T0 + 3600))])
    f.check(st == 204 and b == "", f"delete_series: {st} {b!r}")
    t = str(T0 + 1800)
    st, _, b = api.get("/api/v1/query", [("query", "temp"), ("time", t)])
    res = json.loads(b)["data"]["result"] if st == 200 else None
    f.check(res is not None and [r["metric"]["gpu"] for r in res] == ["1"], f"after delete: {b[:300]}")
    st, _, b = api.get("/api/v1/query", [("query", "temp"), ("time", str(T0 + 7200))])
    res = json.loads(b)["data"]["result"] if st == 200 else None
    f.check(res is not None and len(res) == 2, f"later samples stay: {b[:300]}")
    st, _, b = api.call("POST", "/api/v1/admin/tsdb/clean_tombstones")
    f.check(st == 204 and b == "", f"clean_tombstones: {st} {b!r}")
    st, _, b = api.get("/api/v1/query", [("query", "temp"), ("time", t)])
    res = json.loads(b)["data"]["result"] if st == 200 else None
    f.check(res is not None and [r["metric"]["gpu"] for r in res] == ["1"], f"after clean_tombstones: {b[:300]}")
    kt.stop(p)


def run_query(*args):
    p = subprocess.run([kt.KELVIN, "query", *args], capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr


def check_cli(f, url, data):
    temp = sorted((ls, s) for ls, s in data.items() if ls[0][1] == "temp")
    t_ms = (T0 + 100) * 1000
    rc, out, err = run_query("--server", url, "--time", str(T0 + 100), "temp")
    lines = out.splitlines()
    cols = lambda line: re.split(r"\s{2,}", line.strip())  # noqa: E731
    f.check(rc == 0 and len(lines) == 3 and cols(lines[0]) == ["SERIES", "VALUE"], f"query table: {rc} {out!r}")
    for (ls, s), line in zip(temp, lines[1:]):
        want = "temp{" + ", ".join(f'{k}="{v}"' for k, v in ls[1:]) + "}"
        f.check(cols(line) == [want, marshal_value(sel_value(s, t_ms))], f"query table row: {line!r}")
    rc, out, err = run_query("--server", url, "--json", "--time", str(T0 + 100), "temp")
    f.check(rc == 0 and json.loads(out)["data"]["resultType"] == "vector", f"query --json: {rc} {out[:200]!r}")
    rc, out, err = run_query("--server", url, "--time", "2023-11-14T22:00:00Z", "1+1")
    f.check(rc == 0 and out.split() == ["2"], f"scalar: {rc} {out!r}")
    rc, out, err = run_query("range", "--server", url, "--start", str(T0 + 60), "--end", str(T0 + 90), "--step",
                             "15s", "temp")
    rows = out.splitlines()
    f.check(rc == 0 and len(rows) == 2, f"range table: {rc} {out!r} {err!r}")
    for (ls, s), row in zip(temp, rows):
        vals = [f"{marshal_value(sel_value(s, (T0 + k) * 1000))}@{T0 + k}" for k in (60, 75, 90)]
        want = "temp{" + ", ".join(f'{k}="{v}"' for k, v in ls[1:]) + "}"
        f.check(cols(row) == [want] + vals, f"range row: {row!r} want {[want] + vals}")
    rc, out, err = run_query("--server", url, "1+")
    f.check(rc == 1 and err.strip() == 'query error: bad_data: invalid parameter "query": 1:3: parse error: '
                                       "unexpected end of input", f"query error: {rc} {err!r}")
    rc, out, err = run_query("--server", url, "--time", "x", "1")
    f.check(rc == 1 and err.startswith("error parsing evaluation time:"), f"bad --time: {rc} {err!r}")
    rc, out, err = run_query("range", "--server", url, "--start", "10", "--end", "5", "1")
    f.check(rc == 1 and err.strip() == "start time is not before end time", f"range start>end: {rc} {err!r}")
    port = kt.free_port()
    rc, out, err = run_query("--server", f"http://127.0.0.1:{port}", "1")
    f.check(rc == 1 and err.startswith("query error:"), f"no server: {rc} {err!r}")
    rc, out, err = run_query()
    f.check(rc == 2 and "usage" in err.lower(), f"no expression: {rc} {err!r}")


def main():
    f = Checker()
    work = tempfile.mkdtemp(prefix="kelvin-api-")
    try:
        om = os.path.join(work, "data.om")
        data = write_dataset(om)
        data_dir = os.path.join(work, "data")
        p = subprocess.run([kt.KELVIN, "tsdb", "create-blocks-from", "openmetrics", om, data_dir],
                           capture_output=True, text=True, timeout=240)
        if p.returncode != 0:
            raise AssertionError(f"backfill failed: {p.stderr}")
        proc, url = start_server(work, "main", data_dir, "--storage.tsdb.retention.size=1536MB")
        api = Api(url)
        check_queries(f, api, data)
        check_query_errors(f, api)
        check_series_labels(f, api, data)
        check_http(f, api)
        check_status(f, api, data_dir)
        check_grafana(f, api, data)
        check_cli(f, url, data)
        kt.stop(proc)
        proc, url = start_server(work, "noadmin", data_dir, scrape_self=True)
        check_live_head(f, Api(url))
        check_admin(f, work, data_dir, data, Api(url), proc)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        f.finish("api")


if __name__ == "__main__":
    main()
