#!/usr/bin/python3
"""`kelvin server` ingests what Prometheus 2.42 ingests: a differential test.

One fixture target server (tests/lib/fixture_targets.py) serves bodies
covering the exposition edge cases: escaped label values (\\\\, \\", \\n),
empty and UTF-8 values, duplicate series in one body, NaN, +Inf, -Inf, -0,
explicit timestamps (recent ones, in the head window; honored and, in a
second job, ignored), OpenMetrics with exemplars, _created, UNIT, info,
stateset and `# EOF`, a gzip'd body, a target that times out, one that
answers 500, one that fails every other scrape, sample_limit and
label_limit just over and just at the limit (one flapping over it), a
series that flaps and one that disappears for good (staleness),
honor_labels false and true with conflicting and empty labels
(exported_*, exported_exported_*), and relabel_configs and
metric_relabel_configs using every action of 2.42 (replace, keep, drop,
keepequal, dropequal, hashmod, labelmap, labeldrop, labelkeep, lowercase,
uppercase) with __param_* (and `params:`), __metrics_path__, __scheme__,
__tmp_*, __scrape_interval__/__scrape_timeout__ and __meta_*. Plus a table
of exposition edge cases (EDGES), one job each: lowercase inf/nan, tabs
and trailing blanks, leading blanks, CRLF, no final newline, an empty body,
`{}` and colons in names, repeated label names, reserved label names,
invalid UTF-8, a missing value, a bad name, summaries and histograms,
unknown or missing Content-Type, OpenMetrics without `# EOF`, text after
it, counters without _total, gaugehistograms, _created, UNIT mismatch,
escapes and exemplar timestamps; a metrics_path with a blank and
params needing escapes; label_name_length_limit; target_limit exceeded.

Prometheus 2.42 ($KELVIN_PEERS/bin/prometheus) runs on that config (scrape
interval 1 s) until every target was scraped at least SCRAPES times, gets
SIGTERM (sent in the widest gap between the targets' scrape phases: a
scrape cut short by the shutdown is recorded as failed), and its data
directory is dumped with `promtool tsdb dump`; then
the fixture counters are reset and `kelvin server` runs on the same config
and the same targets, stopped and dumped (`kelvin tsdb dump`) the same way.
Compared:
- the set of series (label sets, as the dumps print them);
- per series, the set of distinct values (the bodies cycle, so both saw
  each body; the count of scrapes may differ by one). NaN is printed "NaN"
  for both real NaN and staleness markers, so staleness shows as NaN in the
  value set of a series whose body never has NaN: a series that flaps, fails
  or disappears has {v, NaN}; one that disappears for good must also END
  with NaN in both, and a series whose reference values have no NaN must
  not end with NaN (markers written at shutdown would be a difference);
- report series (up, scrape_samples_scraped,
  scrape_samples_post_metric_relabeling, scrape_series_added): value sets
  per target like any series; scrape_duration_seconds only exists;
- samples at explicit timestamps: identical (timestamp, value) lists;
  every other timestamp lies within the run (milliseconds, not seconds);
- /api/v1/targets (read while running): the active targets' pool, URL,
  labels, discoveredLabels (except in the job with relabel_configs, where
  2.42 shows them overwritten by the relabeling: a bug not to copy),
  interval and timeout, and the dropped targets' discoveredLabels; /api/v1/targets/metadata: the set of (job,
  metric, type, help, unit);
- what the scrapers asked for: per target the same paths and query
  parameters, the X-Prometheus-Scrape-Timeout-Seconds and Authorization
  headers (basic_auth, authorization, bearer_token_file), and the gzip
  target served gzip'd (the scraper accepted gzip).
Exit 0 only when everything is equal.

Flags: --self runs Prometheus twice instead (checks that the comparison
tolerates timing); --keep keeps the temporary directory.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import fixture_targets as ft  # noqa: E402
import kelvintest as kt  # noqa: E402

PROMETHEUS = os.path.join(kt.PEERS, "bin", "prometheus")
PROMTOOL = os.path.join(kt.PEERS, "bin", "promtool")
SCRAPES = 7  # every target at least this many times per run
RUN_DEADLINE = 20.0  # seconds per server run, start to stop
TIMEOUT_HEADER = "x-prometheus-scrape-timeout-seconds"
COMPARED_HEADERS = (TIMEOUT_HEADER, "authorization")
# Targets of the job over its target_limit: Prometheus does not scrape them.
UNSCRAPED = {"tl_a", "tl_b"}


def bodies(t0):
    """Returns {target name: Target}. t0: explicit timestamp base, ms."""
    s0 = t0 / 1000.0
    esc = (
        "# HELP esc_total Escapes: back\\\\slash and new\\nline in HELP.\n"
        "# TYPE esc_total counter\n"
        'esc_total{path="C:\\\\dir\\\\",quote="say \\"hi\\"",nl="one\\ntwo"} 1\n'
        'esc_total{path="",quote="empty path"} 2\n'
        'esc_total{utf8="gr\u00fc\u00dfe \u2713"} 3\n'
        'esc_total {spaced="yes" , trailing="comma",} 4\n'
    )
    dups = ('dup_metric{a="1"} 1\n'
            'dup_metric{a="1"} 2\n'
            'dup_order{a="1",b="2"} 3\n'
            'dup_order{b="2",a="1"} 4\n'
            "dup_plain 5\n")
    specials = ('special{kind="nan"} NaN\n'
                'special{kind="pinf"} +Inf\n'
                'special{kind="ninf"} -Inf\n'
                'special{kind="negzero"} -0\n'
                'special{kind="tiny"} 1.5e-7\n'
                'special{kind="max"} 1.7976931348623157e+308\n'
                'special{kind="int"} 12345678901234567\n'
                'special{kind="exp_upper"} 2E+3\n')
    ts = [f"ts_fixed 10 {t0}\nts_moving 1 {t0 + 1000}\nts_none 5\n",
          f"ts_fixed 10 {t0}\nts_moving 2 {t0 + 2000}\nts_none 6\n"]
    om = (
        "# TYPE om_requests counter\n"
        "# HELP om_requests Requests handled.\n"
        f'om_requests_total{{code="200"}} 10 # {{trace_id="abc123"}} 0.5 {s0:.3f}\n'
        'om_requests_created{code="200"} 1.6e+09\n'
        "# TYPE om_latency_seconds histogram\n"
        "# UNIT om_latency_seconds seconds\n"
        'om_latency_seconds_bucket{le="0.1"} 3 # {trace_id="x"} 0.05\n'
        'om_latency_seconds_bucket{le="1.0"} 5\n'
        'om_latency_seconds_bucket{le="+Inf"} 6\n'
        "om_latency_seconds_count 6\n"
        "om_latency_seconds_sum 2.5\n"
        "# TYPE om_build info\n"
        'om_build_info{version="1.2.3"} 1\n'
        "# TYPE om_state stateset\n"
        'om_state{om_state="a"} 1\n'
        'om_state{om_state="b"} 0\n'
        "# TYPE om_gauge gauge\n"
        f'om_gauge{{x="ts"}} 4 {s0 + 3.123:.3f}\n'
        'om_gauge{x="nan"} NaN\n'
        "# EOF\n"
    )
    gz = "".join(f'gz_series{{i="{i}",pad="{"x" * 40}"}} {i * 1.5}\n' for i in range(2000))
    five = "".join(f'lim_series{{i="{i}"}} {i}\n' for i in range(5))
    three = "".join(f'lim_series{{i="{i}"}} {i}\n' for i in range(3))
    honor = ('hl_metric{job="body_job",instance="body_inst",env="body",other="x"} 1\n'
             'hl_empty{job=""} 2\n'
             'hl_chain{job="a",exported_job="b"} 3\n'
             'hl_plain{env="body"} 4\n')
    mrel = ('mr_keep{a="Hello",b="x"} 1\n'
            'mr_drop_me{a="1"} 2\n'
            'mr_other{a="AbC",c_tag="t1",c_zone="z"} 3\n'
            'mr_eq{a="same",b="same"} 4\n'
            'mr_keq{x="1",y="2"} 5\n'
            'mr_keq{x="3",y="3"} 6\n'
            "other_family 7\n")
    T = ft.Target
    return [
        T("escapes", [esc]),
        T("dups", [dups]),
        T("specials", [specials]),
        T("ts_honored", ts),
        T("ts_ignored", ts),
        T("openmetrics", [om], content_type=ft.OPENMETRICS),
        T("gzipped", [gz], gzip=True),
        T("stale_cycle", ["sc_always 1\nsc_flap 1\n", "sc_always 2\n"]),
        T("stale_gone", ['sg_keep 1\nsg_gone{a="x"} 7\n'] * 3 + ["sg_keep 1\n"], mode="hold"),
        T("flaky", ["fl_a 1\nfl_b 2\n", (500, "failing\n")]),
        T("badfloat", ["bad_float_a 1\nbad_float_b 0x1p-2\n"]),
        T("slow", ["slow_metric 1\n"], delay=2.0),
        T("error500", ["err_metric 1\n"], status=500),
        T("limit_over", [five]),
        T("limit_ok", [five]),
        T("limit_flap", [three, five]),
        T("labels_over", ['ll{a="1",b="2",c="3"} 1\n']),
        T("labels_ok", ['ll{a="1",b="2",c="3"} 1\n']),
        T("labels_long", ['ll{a="1"} 1\n']),
        T("honor_false", [honor]),
        T("honor_true", [honor]),
        T("trelabel", ['tr_metric{a="1"} 1\n']),
        T("trelabel2", ['tr_metric{a="2"} 2\n']),
        T("mrelabel", [mrel]),
        T("qpath", ["qpath_metric 1\n"]),
        T("auth_basic", ["auth_metric 1\n"]),
        T("auth_bearer", ["auth_metric 2\n"]),
        T("auth_token_file", ["auth_metric 3\n"]),
        T("tl_a", ["tl_metric 1\n"]),
        T("tl_b", ["tl_metric 2\n"]),
        T("labels_name", ['ll{a="1"} 1\n']),
        T("regex", [REGEX_BODY]),
    ] + [T(name, [body], content_type=ctype) for name, (body, ctype) in EDGES.items()]


# Exposition edge cases, one target and one job (edge_<name>) each, so that
# one that fails the scrape does not hide the others. Whatever Prometheus
# makes of them, kelvin must make the same.
_TXT, _OM = ft.TEXT, ft.OPENMETRICS
EDGES = {
    "lowercase_specials": ('e{k="inf"} inf\ne{k="pinf"} +inf\ne{k="ninf"} -Inf\ne{k="infinity"} Infinity\n'
                           'e{k="nan"} nan\ne{k="dot"} .5\ne{k="plus"} +7\ne{k="exp"} 1E3\n', _TXT),
    "whitespace": ('e{a="1"}\t2\ne{a="2"}   3   \n\n\ne{a="3"} 4 \n# a comment\n#\n', _TXT),
    "leading_space": ("  e 1\n", _TXT),
    "crlf": ("e{a=\"1\"} 1\r\ne{a=\"2\"} 2\r\n", _TXT),
    "no_final_newline": ("e 1\ne2 2", _TXT),
    "empty_body": ("", _TXT),
    "empty_braces": ("e{} 1\ncolon:name:x 2\n_under 3\n", _TXT),
    "dup_label_name": ('e{a="1",a="2"} 1\n', _TXT),
    "reserved_label": ('e{__tmp_x="1",__meta_y="2"} 1\n', _TXT),
    "bad_utf8": (b'e{a="\xff\xfe"} 1\n', _TXT),
    "no_value": ("e\n", _TXT),
    "bad_name": ("0e 1\n", _TXT),
    "summary_text": ("# HELP rpc RPC latency.\n# TYPE rpc summary\n"
                     'rpc{quantile="0.5"} 0.1\nrpc{quantile="0.99"} NaN\nrpc_sum 3\nrpc_count 7\n'
                     "# TYPE untyped_thing untyped\nuntyped_thing 1\n# TYPE h histogram\n"
                     'h_bucket{le="1"} 1\nh_bucket{le="+Inf"} 2\nh_sum 1.5\nh_count 2\n', _TXT),
    "text_as_unknown_type": ("e 1\n", "application/json"),
    "no_content_type": ("e 1\n", ""),
    "om_no_eof": ("# TYPE e gauge\ne 1\n", _OM),
    "om_counter_no_total": ("# TYPE c counter\nc 1\n# EOF\n", _OM),
    "om_gaugehistogram": ("# TYPE g gaugehistogram\n"
                          'g_bucket{le="1"} 1\ng_bucket{le="+Inf"} 2\ng_gcount 2\ng_gsum 3\n# EOF\n', _OM),
    "om_summary_created": ("# TYPE s summary\n"
                           's{quantile="0.5"} 1\ns_sum 2\ns_count 3\ns_created 1.5e+09\n# EOF\n', _OM),
    "om_unit_mismatch": ("# TYPE m gauge\n# UNIT m seconds\nm 1\n# EOF\n", _OM),
    "om_text_after_eof": ("# TYPE m gauge\nm 1\n# EOF\nm2 2\n", _OM),
    "om_escapes": ('# TYPE m gauge\nm{a="x\\\\y",b="q\\"z",c="n\\nl"} 1\n# EOF\n', _OM),
    "om_exemplar_ts": ("# TYPE c counter\n"
                       'c_total 5 # {id="a",span="b"} 1 1600000000.5\n# EOF\n', _OM),
}


# RE2 semantics through metric_relabel_configs: full anchoring (also "$"
# before a final newline, which PCRE2 matches by default and RE2 does not),
# "." and newlines, POSIX and Unicode classes, \\Q..\\E, (?i), lazy
# groups, an empty alternative matching a missing label.
REGEX_BODY = "".join(f'rx{{{lbl}}} {i}\n' for i, lbl in enumerate([
    'v="a"', 'v="ab"', 'v="xa"', 'v="UPPER"', 'v="123"', 'v="\u00e91"', 'v="a\\n"', 'v="\\n"', 'v="abc123"',
    'w="novalue"', 'v="\u03b1"', 'v="a.b"', 'v="axb"', 'v="b"']))
REGEX_RULES = r"""    metric_relabel_configs:
      - source_labels: [v]
        regex: '(.*?)(\d*)'
        target_label: prefix
        replacement: '$1'
      - source_labels: [v]
        regex: '(?i)upper'
        action: drop
      - source_labels: [v]
        regex: '[[:digit:]]+'
        action: drop
      - source_labels: [v]
        regex: '\pL\d'
        action: drop
      - source_labels: [v]
        regex: 'a'
        action: drop
      - source_labels: [v]
        regex: '\p{Greek}'
        action: drop
      - source_labels: [v]
        regex: '\Qa.b\E'
        action: drop
      - source_labels: [v]
        regex: 'b|'
        action: drop
      - source_labels: [v]
        regex: '(?s)\n'
        target_label: nl
        replacement: 'yes'
"""


def config(addr, token_file):
    def job(name, path, extra=""):
        return (f"  - job_name: {name}\n    metrics_path: /{path}\n{extra}"
                f"    static_configs:\n      - targets: ['{addr}']\n")

    return (
        "global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\n"
        "scrape_configs:\n"
        + job("escapes", "escapes")
        + job("dups", "dups")
        + job("specials", "specials")
        + job("timestamps", "ts_honored")
        + job("timestamps_ignored", "ts_ignored", "    honor_timestamps: false\n")
        + job("openmetrics", "openmetrics")
        + job("gzip", "gzipped")
        + "".join(job(f"edge_{n}", n) for n in EDGES)
        + job("odd_path", "qpath/sub dir", "    params:\n      q: ['a b&c', 'd']\n")
        + job("stale", "stale_cycle")
        + f"      - targets: ['{addr}']\n        labels: {{__metrics_path__: /stale_gone, which: gone}}\n"
        + job("flaky", "flaky")
        + job("badfloat", "badfloat")
        + job("timeout", "slow", "    scrape_timeout: 500ms\n")
        + job("error500", "error500")
        + job("sample_limit", "limit_over", "    sample_limit: 3\n")
        + job("sample_limit_ok", "limit_ok", "    sample_limit: 5\n")
        + job("sample_limit_flap", "limit_flap", "    sample_limit: 3\n")
        + job("label_limit", "labels_over", "    label_limit: 5\n")
        + job("label_limit_ok", "labels_ok", "    label_limit: 6\n    label_value_length_limit: 20\n"
              "    label_name_length_limit: 8\n")
        + job("label_value_limit", "labels_long", "    label_value_length_limit: 4\n")
        + job("label_name_limit", "labels_name", "    label_name_length_limit: 3\n")
        + job("auth_basic", "auth_basic", "    basic_auth:\n      username: alice\n      password: 's3cr:et'\n")
        + job("auth_bearer", "auth_bearer", "    authorization:\n      credentials: tok-123\n")
        + job("auth_token_file", "auth_token_file", f"    bearer_token_file: {token_file}\n")
        + job("regex", "regex", REGEX_RULES)
        + job("target_limit", "tl_a", "    target_limit: 1\n")
        + f"        labels: {{t: a}}\n      - targets: ['{addr}']\n        labels: {{__metrics_path__: /tl_b, t: b}}\n"
        + f"  - job_name: honor_false\n    metrics_path: /honor_false\n    honor_labels: false\n"
        f"    static_configs:\n      - targets: ['{addr}']\n        labels: {{env: target}}\n"
        + f"  - job_name: honor_true\n    metrics_path: /honor_true\n    honor_labels: true\n"
        f"    static_configs:\n      - targets: ['{addr}']\n        labels: {{env: target}}\n"
        + f"""  - job_name: relabel
    metrics_path: /nonexistent
    params:
      module: [m1, m2]
    static_configs:
      - targets: ['{addr}']
        labels: {{env: Prod, team: ML, __meta_fixture_path: /trelabel, __meta_fixture_zone: eu-1,
                  zone_expected: eu-1, __tmp_mode: fast}}
      - targets: ['{addr}']
        labels: {{env: PROD, team: Web, __meta_fixture_path: /trelabel2}}
      - targets: ['{addr}']
        labels: {{env: Prod, team: Infra, __meta_fixture_path: /dropped1, __meta_fixture_drop: "yes"}}
      - targets: ['{addr}']
        labels: {{env: dev, team: ML, __meta_fixture_path: /dropped2}}
      - targets: ['{addr}']
        labels: {{env: Prod, team: Prod, __meta_fixture_path: /dropped3}}
      - targets: ['{addr}']
        labels: {{env: Prod, team: ML, __meta_fixture_path: /dropped4, __meta_fixture_zone: us-2,
                  zone_expected: eu-1}}
    relabel_configs:
      - source_labels: [__meta_fixture_drop]
        regex: "yes"
        action: drop
      - source_labels: [env]
        regex: "(?i)prod"
        action: keep
      - source_labels: [team]
        target_label: env
        action: dropequal
      - source_labels: [__meta_fixture_zone]
        target_label: zone_expected
        action: keepequal
      - source_labels: [__meta_fixture_path]
        target_label: __metrics_path__
      - source_labels: [__tmp_mode]
        regex: "(.+)"
        target_label: __param_mode
        replacement: "${{1}}_mode"
      - target_label: __scheme__
        replacement: http
      - source_labels: [__address__, __metrics_path__]
        separator: "|"
        modulus: 16
        target_label: shard
        action: hashmod
      - regex: "__meta_fixture_(.+)"
        replacement: "fx_$1"
        action: labelmap
      - source_labels: [env]
        target_label: env_lower
        action: lowercase
      - source_labels: [team]
        target_label: team_upper
        action: uppercase
      - source_labels: [__address__]
        regex: '127\\.0\\.0\\.1:(\\d+)'
        target_label: port
        replacement: "p$1"
      - source_labels: [env]
        regex: nomatch
        target_label: never
      - source_labels: [__scrape_interval__, __scrape_timeout__]
        separator: /
        target_label: timing
      - source_labels: [__param_module]
        target_label: module
      - regex: team
        action: labeldrop
      - regex: "__.*|job|env|env_lower|team_upper|shard|fx_.*|timing|module|port"
        action: labelkeep
  - job_name: metric_relabel
    metrics_path: /mrelabel
    static_configs:
      - targets: ['{addr}']
    metric_relabel_configs:
      - source_labels: [__name__]
        regex: mr_drop_me
        action: drop
      - source_labels: [__name__]
        regex: "mr_.+"
        action: keep
      - source_labels: [a]
        target_label: b
        action: dropequal
      - source_labels: [x]
        target_label: y
        action: keepequal
      - source_labels: [a]
        modulus: 8
        target_label: __tmp_hash
        action: hashmod
      - source_labels: [__tmp_hash]
        target_label: shard
        replacement: "s$1"
      - regex: "c_(.+)"
        replacement: "mapped_$1"
        action: labelmap
      - regex: "c_.*|__tmp_.*"
        action: labeldrop
      - source_labels: [a]
        target_label: a_lower
        action: lowercase
      - source_labels: [a]
        target_label: a_upper
        action: uppercase
      - source_labels: [__name__, a]
        separator: ";"
        regex: "mr_other;(.*)"
        target_label: __name__
        replacement: "mr_renamed_${{1}}"
      - regex: "__name__|job|instance|a|a_.*|b|x|y|shard|mapped_tag"
        action: labelkeep
"""
    )


DUMP_LINE = re.compile(r"^(\{.*\}) (\S+) (-?\d+)$")


def parse_dump(text):
    """{label set string: [(ts, value string)]} from `tsdb dump` output."""
    series = {}
    for line in text.splitlines():
        m = DUMP_LINE.match(line)
        if not m:
            raise AssertionError(f"unparseable dump line: {line!r}")
        series.setdefault(m.group(1), []).append((int(m.group(3)), m.group(2)))
    for v in series.values():
        v.sort()
    return series


def metric_name(key):
    m = re.search(r'__name__="([^"]*)"', key)
    return m.group(1) if m else ""


class Run:
    """One server's run: its dump and what the fixture saw."""

    def __init__(self, label, series, requests, start_ms, end_ms, api):
        self.label, self.series, self.requests = label, series, requests
        self.start_ms, self.end_ms, self.api = start_ms, end_ms, api


def fetch_api(port):
    """The running server's view: {"targets": (active, dropped), "metadata": set}
    in comparable form, or {"error": message}."""
    base = f"http://127.0.0.1:{port}"
    out = {}
    for path in ("/api/v1/targets", "/api/v1/targets/metadata"):
        status, _, body = kt.http(base + path)
        if status != 200:
            return {"error": f"GET {path}: HTTP {status}: {body[:200]!r}"}
        try:
            data = json.loads(body)["data"]
        except (ValueError, KeyError) as e:
            return {"error": f"GET {path}: bad JSON ({e}): {body[:200]!r}"}
        if path.endswith("/metadata"):
            out["metadata"] = {(m["target"].get("job", ""), m["metric"], m.get("type", ""), m.get("help", ""),
                                m.get("unit", "")) for m in data}
            continue

        def url_key(u):
            x = urllib.parse.urlsplit(u)
            return (x.scheme, x.netloc, x.path,
                    json.dumps(urllib.parse.parse_qs(x.query, keep_blank_values=True), sort_keys=True))

        # Prometheus 2.42 shows an active target's discoveredLabels
        # overwritten by its relabeling (populateLabels hands the pre-relabel
        # slice to relabel.Process as the output buffer): not compared for
        # the job with relabel_configs.
        active = sorted((t["scrapePool"], url_key(t["scrapeUrl"]), json.dumps(t["labels"], sort_keys=True),
                         "" if t["scrapePool"] == "relabel" else json.dumps(t["discoveredLabels"], sort_keys=True),
                         t.get("scrapeInterval"), t.get("scrapeTimeout")) for t in data["activeTargets"])
        dropped = sorted(json.dumps(t["discoveredLabels"], sort_keys=True) for t in data["droppedTargets"])
        out["targets"] = (active, dropped)
    return out


def run_server(label, cmd_prefix, dump_cmd, cfg_path, srv, work):
    data = os.path.join(work, f"data-{label}")
    log = os.path.join(work, f"{label}.log")
    port = kt.free_port()
    srv.reset()
    start_ms = int(time.time() * 1000)
    p = kt.start(cmd_prefix + [f"--config.file={cfg_path}", f"--web.listen-address=127.0.0.1:{port}",
                               f"--storage.tsdb.path={data}"], log=log)
    try:
        deadline = time.time() + RUN_DEADLINE
        while time.time() < deadline:
            if p.poll() is not None:
                raise AssertionError(f"{label} exited with {p.returncode}; log:\n{tail(log)}")
            if min(t.count for t in srv.targets() if t.name not in UNSCRAPED) >= SCRAPES:
                api = fetch_api(port)
                wait_for_quiet_moment(srv)
                break
            time.sleep(0.2)
        else:
            counts = {t.name: t.count for t in srv.targets()}
            raise AssertionError(f"{label}: not every target was scraped {SCRAPES} times in "
                                 f"{RUN_DEADLINE}s: {counts}; log:\n{tail(log)}")
    finally:
        rc = kt.stop(p, timeout=15)
    end_ms = int(time.time() * 1000)
    if rc != 0:
        raise AssertionError(f"{label} exited with {rc} after SIGTERM; log:\n{tail(log)}")
    requests = {t.name: list(t.requests) for t in srv.targets()}
    r = subprocess.run(dump_cmd + [data], capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        raise AssertionError(f"{' '.join(dump_cmd)} {data} failed ({r.returncode}): {r.stderr[-2000:]}")
    return Run(label, parse_dump(r.stdout), requests, start_ms, end_ms, api)


def wait_for_quiet_moment(srv, interval=1.0):
    """Sleeps until the middle of the widest gap between the targets' scrape
    phases (every job has a 1 s interval), so that SIGTERM finds no scrape
    in flight: one cut short by the shutdown is recorded as failed (up 0,
    staleness markers), which would differ between runs by chance. Only the
    slow target (which always fails) may be in flight then."""
    phases = sorted({r["mono"] % interval for t in srv.targets() for r in t.requests[-3:]})
    if not phases:
        return
    best, start = -1.0, 0.0
    for i, p in enumerate(phases):
        gap = (phases[(i + 1) % len(phases)] - p) % interval or interval
        if gap > best:
            best, start = gap, p
    mid = (start + best / 2) % interval
    now = time.monotonic()
    at = now - now % interval + mid
    while at < now + 0.02:
        at += interval
    time.sleep(at - now)


def tail(path, n=30):
    try:
        with open(path, errors="replace") as fh:
            return "".join(fh.readlines()[-n:])
    except OSError:
        return "(no log)"


def vset(samples):
    return sorted({v for _, v in samples}, key=lambda s: (s == "NaN", float(s) if s != "NaN" else 0, s))


LIMIT_FLAP_JOB = 'job="sample_limit_flap"'


def is_limit_flap_series(key):
    return metric_name(key) == "lim_series" and LIMIT_FLAP_JOB in key


def check_limit_flap(run, fail):
    """A deliberate difference (not compared with 2.42): the sample_limit_flap
    target alternates a body of 3 series (i=0..2) with one of 5 that passes
    sample_limit: 3 and fails the scrape. kelvin (like Prometheus's staleness
    design, and Prometheus since PR #16429) marks every series of the last
    good scrape stale at each failed scrape and stores nothing of the failed
    body: lim_series i=0..2 get a staleness marker at the time of every
    failed scrape (up == 0), and i=3, i=4 never exist. 2.42 instead writes no
    markers for the series the failed body still lists and, at the next good
    scrape, markers for i=3/i=4, series it never stored (a 2.42 bug)."""
    ups = [v for k, v in run.series.items() if metric_name(k) == "up" and LIMIT_FLAP_JOB in k]
    fail.check(len(ups) == 1, f"{run.label}: {len(ups)} up series for {LIMIT_FLAP_JOB}")
    if len(ups) != 1:
        return
    # a failed scrape right after a good one (the first scrape may fail)
    failed = [t for (_, pv), (t, v) in zip(ups[0], ups[0][1:]) if v == "0" and pv == "1"]
    good = [t for t, v in ups[0] if v == "1"]
    fail.check(failed and good, f"{run.label}: sample_limit_flap did not flap: up {vset(ups[0])}")
    lim = {k: v for k, v in run.series.items() if is_limit_flap_series(k)}
    for i in range(5):
        keys = [k for k in lim if f'i="{i}"' in k]
        if i >= 3:
            fail.check(not keys, f"{run.label}: lim_series i={i} stored (a failed scrape stores nothing): {keys}")
            continue
        fail.check(len(keys) == 1, f"{run.label}: lim_series i={i}: {len(keys)} series")
        if len(keys) != 1:
            continue
        ss = dict(lim[keys[0]])
        fail.check(vset(lim[keys[0]]) == [str(i), "NaN"], f"{run.label}: lim_series i={i} values {vset(lim[keys[0]])}")
        missing = [t for t in failed if ss.get(t) != "NaN"]
        fail.check(not missing, f"{run.label}: lim_series i={i}: no staleness marker at failed scrapes {missing[:3]}")
        notgood = [t for t in good if ss.get(t) != str(i)]
        fail.check(not notgood, f"{run.label}: lim_series i={i}: no sample at good scrapes {notgood[:3]}")


def compare(a, b, explicit_ts, fail):
    """a: the reference (Prometheus), b: the run under test."""
    if b.label == "kelvin":
        check_limit_flap(b, fail)
        a.series = {k: v for k, v in a.series.items() if not is_limit_flap_series(k)}
        b.series = {k: v for k, v in b.series.items() if not is_limit_flap_series(k)}
    ka, kb = set(a.series), set(b.series)
    for k in sorted(ka - kb):
        fail.check(False, f"series only in {a.label}: {k} values {vset(a.series[k])}")
    for k in sorted(kb - ka):
        fail.check(False, f"series only in {b.label}: {k} values {vset(b.series[k])}")
    for k in sorted(ka & kb):
        sa, sb = a.series[k], b.series[k]
        name = metric_name(k)
        if name != "scrape_duration_seconds":
            va, vb = vset(sa), vset(sb)
            fail.check(va == vb, f"{k}: values {a.label} {va} != {b.label} {vb}")
            # Where the bodies cycle, the last sample depends on how many
            # scrapes each run made; the end is fixed where the reference
            # never has NaN (no markers at shutdown) and for sg_gone.
            ea, eb = sa[-1][1] == "NaN", sb[-1][1] == "NaN"
            fail.check(ea == eb or ("NaN" in va and name != "sg_gone"),
                       f"{k}: last sample {a.label} {sa[-1][1]} vs {b.label} {sb[-1][1]} "
                       "(a series that disappeared ends with a staleness marker)")
        xa = [s for s in sa if s[0] in explicit_ts]
        xb = [s for s in sb if s[0] in explicit_ts]
        fail.check(xa == xb, f"{k}: samples at explicit timestamps {a.label} {xa} != {b.label} {xb}")
    for run in (a, b):
        lo, hi = run.start_ms - 1000, run.end_ms + 1000
        for k, ss in run.series.items():
            bad = [t for t, _ in ss if t not in explicit_ts and not lo <= t <= hi]
            fail.check(not bad, f"{run.label}: {k} has timestamps outside its run [{lo}, {hi}]: {bad[:3]}")
    # What the scrapers asked for.
    for name in sorted(set(a.requests) | set(b.requests)):
        ra, rb = a.requests.get(name, []), b.requests.get(name, [])

        def asked(reqs):
            return sorted({(r["path"], json.dumps(urllib.parse.parse_qs(r["query"], keep_blank_values=True),
                                                  sort_keys=True)) for r in reqs})

        def header(reqs, h):
            return sorted({r["headers"].get(h, "(none)") for r in reqs})

        fail.check(asked(ra) == asked(rb), f"target {name}: requested {a.label} {asked(ra)} != {b.label} {asked(rb)}")
        for h in COMPARED_HEADERS:
            fail.check(header(ra, h) == header(rb, h),
                       f"target {name}: header {h}: {a.label} {header(ra, h)} != {b.label} {header(rb, h)}")
    # The HTTP API's view of the targets and their metadata.
    for run in (a, b):
        fail.check("error" not in run.api, f"{run.label}: {run.api.get('error')}")
    if "error" not in a.api and "error" not in b.api:
        (aa, ad), (ba, bd) = a.api["targets"], b.api["targets"]
        for t in sorted(set(aa) - set(ba)):
            fail.check(False, f"/api/v1/targets: active target only in {a.label}: {t}")
        for t in sorted(set(ba) - set(aa)):
            fail.check(False, f"/api/v1/targets: active target only in {b.label}: {t}")
        fail.check(ad == bd, f"/api/v1/targets: dropped targets' discoveredLabels {a.label} {ad} != {b.label} {bd}")
        ma, mb = a.api["metadata"], b.api["metadata"]
        for m in sorted(ma - mb):
            fail.check(False, f"/api/v1/targets/metadata: only in {a.label}: {m}")
        for m in sorted(mb - ma):
            fail.check(False, f"/api/v1/targets/metadata: only in {b.label}: {m}")
    for run in (a, b):
        gz = run.requests.get("gzipped", [])
        fail.check(gz and all(r["gzip"] for r in gz),
                   f"{run.label}: the gzip target was not served gzip'd (Accept-Encoding: "
                   f"{sorted({r['headers'].get('accept-encoding', '(none)') for r in gz})})")


def sanity(run, fail):
    """Facts of the reference run that the fixtures are built to produce; if
    these fail, the test itself (or the peer) is broken, not kelvin."""
    s = run.series

    def vals(prefix, *parts):
        for k, v in s.items():
            if k.startswith("{__name__=\"" + prefix + "\"") and all(p in k for p in parts):
                return vset(v)
        return None

    fail.check(vals("up", 'job="timeout"') == ["0"], f"{run.label}: timeout target not down")
    fail.check(vals("up", 'job="error500"') == ["0"], f"{run.label}: 500 target not down")
    fail.check(vals("up", 'job="sample_limit"') == ["0"], f"{run.label}: sample_limit target not down")
    fail.check(vals("up", 'job="badfloat"') == ["0"], f"{run.label}: badfloat target not down")
    fail.check(vals("up", 'job="label_value_limit"') == ["0"], f"{run.label}: label_value_limit target not down")
    for job in ("specials", "label_limit_ok", "sample_limit_ok", "openmetrics", "gzip", "escapes"):
        fail.check(vals("up", f'job="{job}"') == ["1"], f"{run.label}: target of job {job} not up")
    fail.check(vals("up", 'job="flaky"') == ["0", "1"], f"{run.label}: flaky target not flapping")
    fail.check(vals("sg_gone") == ["7", "NaN"], f"{run.label}: sg_gone has no staleness marker")
    fail.check(vals("sc_flap") == ["1", "NaN"], f"{run.label}: sc_flap has no staleness marker")
    fail.check(vals("tr_metric") is not None, f"{run.label}: relabeled target not scraped")
    fail.check(vals("up", 'job="target_limit"') == ["0"], f"{run.label}: target_limit targets not down")
    fail.check(vals("up", 'job="label_name_limit"') == ["0"], f"{run.label}: label_name_limit target not down")
    for name, want in (("auth_basic", "Basic YWxpY2U6czNjcjpldA=="), ("auth_bearer", "Bearer tok-123"),
                       ("auth_token_file", "Bearer file-tok")):
        got = {r["headers"].get("authorization") for r in run.requests.get(name, [])}
        fail.check(got == {want}, f"{run.label}: target {name} got Authorization {got}, want {want}")
    fail.check(len(s) > 60, f"{run.label}: only {len(s)} series")


def main():
    fail = kt.Failures()
    self_test = "--self" in sys.argv[1:]
    keep = "--keep" in sys.argv[1:]
    work = tempfile.mkdtemp(prefix="kelvin-scrape-diff-")
    srv = None
    try:
        for tool in (PROMETHEUS, PROMTOOL) + (() if self_test else (kt.KELVIN,)):
            if not os.access(tool, os.X_OK):
                raise AssertionError(f"{tool} is missing (scripts/peers fetches the peers)")
        t0 = (int(time.time()) - 30) * 1000
        explicit_ts = {t0, t0 + 1000, t0 + 2000, t0 + 3123}
        srv = ft.FixtureServer(bodies(t0), max_conns=256).start()
        cfg = os.path.join(work, "prometheus.yml")
        token_file = os.path.join(work, "token")
        with open(token_file, "w") as fh:
            fh.write("file-tok\n")
        with open(cfg, "w") as fh:
            fh.write(config(srv.address, token_file))
        prom = run_server("prometheus", [PROMETHEUS, "--log.level=debug"], [PROMTOOL, "tsdb", "dump"], cfg, srv,
                          work)
        sanity(prom, fail)
        if self_test:
            other = run_server("prometheus-2", [PROMETHEUS, "--log.level=debug"], [PROMTOOL, "tsdb", "dump"], cfg,
                               srv, work)
        else:
            other = run_server("kelvin", [kt.KELVIN, "server", "--log.level=debug"], [kt.KELVIN, "tsdb", "dump"], cfg,
                               srv, work)
        compare(prom, other, explicit_ts, fail)
        fail.check(srv.rejected == 0, f"the fixture server turned away {srv.rejected} connections (max_conns)")
        if len(fail.items) > 100:
            n = len(fail.items) - 100
            del fail.items[100:]
            fail.items.append(f"... and {n} more differences")
        print(f"{len(prom.series)} series from Prometheus, {len(other.series)} from {other.label}")
    finally:
        if srv is not None:
            srv.stop()
        if keep or fail.items or sys.exc_info()[1] is not None:
            print(f"work directory kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
        fail.finish("scrape_diff" + (" (--self)" if self_test else ""))


if __name__ == "__main__":
    main()
