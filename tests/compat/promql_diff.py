#!/usr/bin/python3
"""PromQL differential suite: `kelvin server` answers /api/v1/query and
/api/v1/query_range exactly as Prometheus 2.42 does, on the same data.

Data: tests/lib/promql_data.py's DIFF set (3 hosts, 2 h at 15 s from
2024-01-01T00:00Z: dcgm-exporter gauges and counters, CPU counters with a
reboot, a classic histogram and a broken one, NaN/+Inf/-Inf/-0/denormals, a
gap longer than the lookback, series that start late or stop early, missing
scrapes, unaligned scrape offsets, label values needing escapes), one
OpenMetrics file backfilled by `promtool tsdb create-blocks-from openmetrics`
and by `kelvin tsdb create-blocks-from openmetrics`. Both servers serve
their directory with the same prometheus.yml (evaluation_interval 1m: the
default subquery step; retention long enough to keep 2024) whose only job
scrapes a local target every 2 s for the live staleness check below.

Queries: ~850 generated below (queries()): every function of 2.42's
parser/functions.go (FUNCTIONS_242, checked to be used), every operator
(arithmetic, comparison with and without bool, and/or/unless,
on/ignoring/group_left/group_right), every aggregation with by/without/none
and parameters that vary per step, offset (negative too), @ with numbers and
start()/end(), subqueries (nested, default step, with offset and @),
literals (and how numbers are spelled), string and scalar results,
label_replace/label_join, histogram_quantile, sort/topk order. Each runs as
an instant query at 4 times (RFC 3339 and Unix seconds, the first scrape,
after the data's end) through GET, and as a range query with 4 (start, end,
step) through POST: 15 s over the data, 1 m over a wider window in RFC 3339,
7 m from an unaligned start, 37.5 s. Plus ~70 bad requests (parse, type and
execution errors; bad API parameters), each as instant and range query.

Live staleness: stale markers cannot be written in OpenMetrics text, so
both servers also scrape stale_test{series="keep"|"vanish"} from a local
target; once each has 3 scrapes, "vanish" disappears from the body, and after
both scraped again (writing its stale marker) LIVE_QUERIES run as instant
queries at one common time and as range queries from just after the later
marker: the answers must agree (values are constant; timestamps are the
query's), and Prometheus must hide the vanished series.

Compared per variant: HTTP status; JSON status; errorType and error text;
warnings; resultType; the set of series labels (exact); per series the
timestamps (exact) and values (within 1e-9 relative; NaN == NaN; +-Inf
equal; bit-equal values must also be spelled the same, except 0 and -0,
which Prometheus itself answers either way for max/min in range queries).
Vectors are unordered except at the top level of sort, sort_desc, topk and
bottomk, where the order of values must match (series with equal values may
come in any order among themselves: Go's sort is not stable). Byte-identical
bodies are counted (information; --strict-bytes makes any other body a
failure and shows where it parts). Queries whose Prometheus answer is itself
not deterministic (topk over an aggregation with ties in a range query: Go
map order) are left out.

The harness checks itself on every run: every good query succeeds on
Prometheus in some variant and at most 8% return no data anywhere, every bad
request fails on Prometheus, and perturbed copies of Prometheus's answers (a
value off by 1e-8, a dropped series, an extra label, a timestamp off by 1
ms, another error text, two values swapped in an ordered answer, a number
spelled otherwise) must be caught while a value off by 1e-12 must not.

Modes:
  (default)     Prometheus vs kelvin ($KELVIN_BIN); exit 1 on any difference.
  --self-test   Prometheus vs itself (the comparison is deterministic on
                these queries), the perturbations applied to the second
                answer, and the queries without data listed.
  --list        print the queries and exit.
  --filter RE   only queries matching RE.  --max-failures N  (default 60
                printed).  --no-live  skip the live staleness check.
  --keep        keep the temporary directory (data, logs).
Loops are bounded (a global deadline, DIFF_DEADLINE seconds, default 250;
every wait on a server 20-60 s); only 127.0.0.1 is used; every process
started is stopped, failure included. Takes ~25 s on an idle 2-core machine.
"""
import argparse
import concurrent.futures
import math
import os
import re
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import kelvintest as kt  # noqa: E402
import promql_data as pd  # noqa: E402

PROMETHEUS = os.path.join(kt.PEERS, "bin", "prometheus")
PROMTOOL = os.path.join(kt.PEERS, "bin", "promtool")
DEADLINE = float(os.environ.get("DIFF_DEADLINE", "250"))
T0 = pd.T0
REL = 1e-9

# ---------------------------------------------------------------------------
# variants: when and how each query runs
# ---------------------------------------------------------------------------

INSTANTS = [
    ("instant@00:00 (the first scrape)", pd.fmt_time(T0)),
    ("instant@00:30 (RFC 3339)", "2024-01-01T00:30:00Z"),
    ("instant@00:46:07.123", pd.fmt_time(T0 + 46 * 60 + 7.123)),
    ("instant@02:04 (after the data)", pd.fmt_time(T0 + 7200 + 240)),
]
RANGES = [
    ("range 00:00-02:00 step 15", pd.fmt_time(T0), pd.fmt_time(T0 + 7200), "15"),
    ("range 23:50-02:10 step 1m (RFC 3339)", "2023-12-31T23:50:00Z", "2024-01-01T02:10:00.000Z", "1m"),
    ("range 00:20:34.567-01:56:40 step 7m", pd.fmt_time(T0 + 1234.567), pd.fmt_time(T0 + 7000), "7m"),
    ("range 01:30:00.5-02:05 step 37.5", pd.fmt_time(T0 + 5400.5), pd.fmt_time(T0 + 7500), "37.5"),
]

# ---------------------------------------------------------------------------
# the queries
# ---------------------------------------------------------------------------

G = "DCGM_FI_DEV_GPU_TEMP"
M = "DCGM_FI_DEV_MEMORY_TEMP"
P = "DCGM_FI_DEV_POWER_USAGE"
E = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"
F = "DCGM_FI_DEV_FB_USED"
U = "DCGM_FI_DEV_GPU_UTIL"
C = "node_cpu_seconds_total"
MEM = "node_memory_MemAvailable_bytes"
H = "app_request_duration_seconds_bucket"
HS = "app_request_duration_seconds_sum"
HC = "app_request_duration_seconds_count"
B = "app_broken_seconds_bucket"
S = "test_special_values"
PS = "probe_success"
W = "signal_ratio"
UP = "up"
INFO = "gpu_node_info"
ESC = "label_escapes"
BATCH = "batch_job_progress"
T_AT = T0 + 1800  # an @ time inside the data

# Every function of Prometheus 2.42 (promql/parser/functions.go at v2.42.0).
FUNCTIONS_242 = [
    "abs", "absent", "absent_over_time", "acos", "acosh", "asin", "asinh", "atan", "atanh", "avg_over_time",
    "ceil", "changes", "clamp", "clamp_max", "clamp_min", "cos", "cosh", "count_over_time", "days_in_month",
    "day_of_month", "day_of_week", "day_of_year", "deg", "delta", "deriv", "exp", "floor", "histogram_count",
    "histogram_sum", "histogram_fraction", "histogram_quantile", "holt_winters", "hour", "idelta", "increase",
    "irate", "label_replace", "label_join", "last_over_time", "ln", "log10", "log2", "max_over_time",
    "min_over_time", "minute", "month", "pi", "predict_linear", "present_over_time", "quantile_over_time", "rad",
    "rate", "resets", "round", "scalar", "sgn", "sin", "sinh", "sort", "sort_desc", "sqrt", "stddev_over_time",
    "stdvar_over_time", "sum_over_time", "tan", "tanh", "time", "timestamp", "vector", "year",
]
AGGREGATIONS = ["sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values", "bottomk",
                "topk", "quantile"]
BINOPS = ["+", "-", "*", "/", "%", "^", "==", "!=", ">", "<", ">=", "<=", "and", "or", "unless"]

MATH = ["abs", "ceil", "floor", "exp", "sqrt", "ln", "log2", "log10", "sgn", "deg", "rad", "acos", "acosh", "asin",
        "asinh", "atan", "atanh", "cos", "cosh", "sin", "sinh", "tan", "tanh"]
DATE = ["day_of_month", "day_of_week", "day_of_year", "days_in_month", "hour", "minute", "month", "year"]
RANGE_FNS = ["rate", "irate", "increase", "delta", "idelta", "deriv", "resets", "changes", "avg_over_time",
             "min_over_time", "max_over_time", "sum_over_time", "count_over_time", "last_over_time",
             "present_over_time", "stddev_over_time", "stdvar_over_time"]
SIMPLE_AGGS = ["sum", "min", "max", "avg", "group", "stddev", "stdvar", "count"]


def queries():
    q = []
    add = q.append
    # --- selectors, matchers, offset, @ ------------------------------------------
    for s in [G, f'{G}{{gpu="0"}}', f'{G}{{Hostname!="node-b"}}', f'{G}{{Hostname=~"node-(a|c)"}}',
              f'{G}{{Hostname!~"node-a|node-b"}}', '{__name__=~"DCGM_FI_DEV_(GPU|MEMORY)_TEMP"}',
              '{__name__=~"DCGM_.*", gpu="1"}', '{job="node", mode="user"}', f'{C}{{mode=~"user|system", cpu="1"}}',
              f'{G}{{nonexistent=""}}', f"{G}{{}}", f'{G}{{gpu=~""}}', f'{G}{{gpu!=""}}', '{__name__="up"}', f'{UP}{{job=~".*"}}',
              f'{G}{{Hostname=~"NODE-A"}}', f'{G}{{Hostname=~"(?i)NODE-A"}}', f'{G}{{Hostname=~"node-.?"}}',
              f'{G}{{UUID=~"GPU-7a1c.*"}}', ESC, f'{ESC}{{quote=~".*\\"hi\\".*"}}', f'{ESC}{{utf8=~"temp.*"}}',
              f'{ESC}{{nl=~"line1\\nline2"}}', f'{ESC}{{slash="C:\\\\temp\\\\"}}', S, F, BATCH, PS, W, MEM, INFO, H,
              B, HS, HC, "nonexistent_metric", f"{G} offset 5m", f"{G} offset -5m", f"{G} offset 1h30m",
              f"{F} offset 10m", f"{F} offset -30m", f"{G} @ {T_AT}", f"{G} @ start()", f"{G} @ end()",
              f"{G} @ {T_AT}.5 offset 10m", f"{G} offset 10m @ {T_AT}", f"{G} @ end() offset -1h", f"{G} @ -1",
              f"{F} @ {T0 + 2700}", f"{BATCH} @ {T0 + 2000}", f"{G} @ 1.7040672e9", f"{PS} offset 37s",
              f"{G} offset 1d", f'{G}{{Hostname=~"node-a|"}}', f'{{__name__=~".*_TEMP", Hostname=~".+"}}',
              f'{G}{{Hostname!~".*"}}', f'{G}{{Hostname=~".*", gpu=~"0|1", UUID!~"x.*"}}', f"-{G} offset 5m",
              f'{C}{{mode=~"^user$"}}', f'{C}{{mode=~"us.r|id.e"}}',
              f'{G}{{Hostname=~"node-[ab]",Hostname!="node-a"}}', f"{MEM} offset 1h @ end()"]:
        add(s)
    # range selectors at the top level (instant: a matrix; range query: an error)
    for s in [f"{G}[1m]", f"{F}[5m] offset 2m", f"{PS}[2m]", f"{S}[1m]", f"{G}[30s] @ end()", f"{ESC}[45s]",
              f"{W}[1m] offset -1m", f"{BATCH}[10m] @ {T0 + 2050}"]:
        add(s)
    # --- literals, scalars and strings -----------------------------------------------
    for s in ["1", "-1.5e3", "0x1F", "1e3", "1E-3", ".5", "5.", "Inf", "-Inf", "NaN", "-NaN", "+1", "- - 1",
              "1 + 2 * 3", "(1 + 2) * 3", "2 ^ 3 ^ 2", "-2 ^ 2", "(-2) ^ 2", "2 ^ -1", "1 / 0", "-1 / 0", "0 / 0",
              "5 % 3", "-5 % 3", "5.5 % -2", "1 - - 1", "1 + 2 == bool 3", "1 > bool 2", "1 < bool 2",
              "NaN == bool NaN", "Inf > bool -Inf", "2 != bool 2", "3 >= bool 3", "3 <= bool 2",
              '"hello"', "'single'", "`raw \\n string`", '"esc \\" \\\\ \\n \\t"', '"üñí"',
              "time()", "pi()", "time() - 1704067200", "scalar(vector(3))", "vector(1)", "vector(time())",
              "vector(NaN)", "-vector(2)", "1 + vector(2)", "0.1 + 0.2", "1e308 * 10", "2 ^ 1024", "2 ^ 0.5",
              "9007199254740993", "0.000001", "123456789012345678901234567890", "1 % 0", "-0", "0 * -1",
              "1e-7", "1e21", "1.5e300", "-1e-300", "5e-324", "0.1 * 3", "1/3", "2/3 * 1e-10", "4.35",
              "100000000000000000000000", "0.30000000000000004", "time() + 0.001"]:
        add(s)
    # --- math on instant vectors ------------------------------------------------------
    for f in MATH:
        add(f"{f}({W})")
        add(f"{f}({S})")
    for f in ["abs", "ceil", "floor", "sqrt", "ln", "exp", "sgn"]:
        add(f"{f}({G} - 60)")
        add(f"{f}(-{P})")
    for s in [f"round({W})", f"round({W}, 0.1)", f"round({S}, 5)", f"round({P}, 10)", f"round({P}, 0.001)",
              f"round({P} / 7, 1/3)", f"round({W}, -0.5)", f"round({S})", f"round(-{P}, 2)",
              f"clamp({G}, 40, 60)", f"clamp({G}, 60, 40)", f"clamp({S}, -1, 1)", f"clamp({G}, 50, 50)",
              f"clamp_max({G}, 50)", f"clamp_min({G}, 50)", f"clamp_min({S}, NaN)", f"clamp_max({S}, Inf)",
              f"clamp_max({S}, -Inf)", f"clamp({W}, -0.5, scalar(sum({PS})))"]:
        add(s)
    for f in DATE:
        add(f"{f}()")
        add(f"{f}(timestamp({G}))")
        add(f"{f}({G} * 86400 * 30)")
        add(f"{f}({S})")
    add(f"year(vector(1704067199))")
    add(f"month(vector(951782400))")  # 2000-02-29
    add(f"days_in_month(vector(951782400))")
    add(f"day_of_week(vector(-86400))")
    # --- time, scalar, vector, timestamp, absent -------------------------------------------
    for s in [f'scalar({G}{{Hostname="node-a",gpu="0"}})', f"scalar({G})", f"scalar(sum({G}))",
              f"scalar(nonexistent_metric)", f"timestamp({G})", f"timestamp({F})", f"timestamp({G} offset 3m)",
              f"timestamp(sum({G}))", f"timestamp({G} @ start())", f"timestamp({PS})", f"timestamp(-{G})",
              f"time() - timestamp({PS})", "absent(nonexistent_metric)",
              'absent(nonexistent_metric{job="x", instance=~"y.*"})', f"absent({G})",
              "absent(sum(nonexistent_metric))", 'absent(nonexistent_metric{job="a", job="b"})',
              'absent(nonexistent_metric{job="x"} offset 5m)', 'absent_over_time(nonexistent_metric{job="x"}[5m])',
              f"absent_over_time({F}[1m])", f"absent_over_time({BATCH}[5m])", f'absent_over_time({G}{{gpu="9"}}[1m])',
              'absent({__name__=~"nonexistent.*"})', f"vector(scalar(count({G})))"]:
        add(s)
    # --- range-vector functions --------------------------------------------------------------
    for f in RANGE_FNS:
        for sel in [f"{E}[5m]", f"{C}[1m]", f"{F}[7m]", f"{PS}[2m]", f"{S}[3m]", f"{G}[45s]"]:
            add(f"{f}({sel})")
    for f in ["rate", "increase", "delta", "irate", "deriv", "changes", "avg_over_time"]:
        add(f"{f}({E}[5m] offset 10m)")
        add(f"{f}({C}[2m] @ {T_AT})")
        add(f"{f}({W}[90s])")
    for qv in ["0", "0.5", "0.99", "1", "-1", "2", "NaN"]:
        add(f"quantile_over_time({qv}, {G}[5m])")
    add(f"quantile_over_time(0.5, {S}[5m])")
    add(f"quantile_over_time(0.9, {PS}[10m])")
    for s in [f"predict_linear({F}[10m], 600)", f"predict_linear({E}[5m], -300)", f"predict_linear({S}[5m], 60)",
              f"predict_linear({F}[1h], 4*3600)", f"predict_linear({G}[2m], 0)", f"deriv({W}[10m])",
              f"holt_winters({F}[10m], 0.5, 0.5)", f"holt_winters({G}[5m], 0.1, 0.9)",
              f"holt_winters({S}[5m], 0.3, 0.3)", f"holt_winters({W}[15m], 0.8, 0.2)",
              f"rate({E}[1h])", f"increase({E}[2h])", f"rate({C}[15s])", f"irate({C}[15s])", f"rate({C}[30s])",
              f"rate({PS}[20m])", f"delta({W}[10m])", f"idelta({F}[5m])", f"resets({C}[1h])", f"changes({U}[10m])",
              f"sum_over_time({S}[10m])", f"avg_over_time({S}[10m])", f"stddev_over_time({W}[20m])"]:
        add(s)
    # native-histogram functions: the data has none, so they select nothing
    for s in [f"histogram_count({H})", f"histogram_sum(rate({H}[5m]))", f"histogram_fraction(0, 0.1, {H})"]:
        add(s)
    # --- histogram_quantile ---------------------------------------------------------------------
    for qv in ["0.5", "0.9", "0.99", "0", "1", "-0.5", "1.5", "NaN"]:
        add(f"histogram_quantile({qv}, sum by (le) (rate({H}[5m])))")
    for s in [f"histogram_quantile(0.9, sum by (le, instance) (rate({H}[5m])))",
              f"histogram_quantile(0.9, rate({H}[5m]))", f"histogram_quantile(0.5, {H})",
              f"histogram_quantile(0.9, {B})", f"histogram_quantile(0.5, rate({B}[5m]))",
              f"histogram_quantile(0.9, sum without (instance, handler) (rate({H}[5m])))",
              f'histogram_quantile(scalar({W}{{shape="saw"}}), rate({H}[5m]))',
              f"histogram_quantile(0.9, {G})", f"histogram_quantile(0.99, sum by (le) (increase({H}[10m]))) * 1000",
              f"histogram_quantile(0.75, sum by (le, handler) (rate({H}[1m])))",
              f'histogram_quantile(0.5, {H}{{le=~"0.1|0.5|\\\\+Inf"}})']:
        add(s)
    # --- label functions -----------------------------------------------------------------------------
    for s in [f'label_replace({G}, "host", "$1", "Hostname", "node-(.*)")',
              f'label_replace({G}, "Hostname", "", "Hostname", ".*")',
              f'label_replace({G}, "x", "$1-$2", "UUID", "GPU-(....)(....).*")',
              f'label_replace({G}, "x", "${{1}}y", "gpu", "(.*)")',
              f'label_replace({G}, "x", "static", "nonexistent", "")',
              f'label_replace({G}, "x", "static", "nonexistent", ".+")',
              f'label_replace({G}, "__name__", "renamed_$1", "gpu", "(.*)")',
              f'label_replace({G}, "gpu", "$0$0", "gpu", "(.)")',
              f'label_replace({G}, "x", "$name", "Hostname", "(?P<name>node)-.*")',
              f'label_replace({G}, "x", "$9", "Hostname", "(.*)")',
              f'label_replace({ESC}, "copy", "$1", "utf8", "(.*)")',
              f'label_replace({G}, "x", "y", "Hostname", "node-a|node-b")',
              f'label_replace({G}, "x", "y", "Hostname", "node")',
              f'label_join({G}, "id", "/", "Hostname", "gpu")', f'label_join({G}, "id", "-")',
              f'label_join({G}, "Hostname", "-", "Hostname", "gpu")',
              f'label_join({ESC}, "all", ",", "path", "quote", "utf8", "nl")',
              f'label_join({G}, "__name__", "_", "job", "gpu")', f'label_join({G}, "x", "", "nonexistent")',
              f'label_join(sum by (Hostname) ({P}), "h2", "", "Hostname", "Hostname")']:
        add(s)
    # --- sort, topk, bottomk (order matters) -------------------------------------------------------------
    for s in [f"sort({G})", f"sort_desc({G})", f"sort({S})", f"sort_desc({S})", f"sort(rate({E}[5m]))",
              f"sort_desc(sum by (Hostname) ({P}))", f"sort({W})", f"sort_desc({M} - {G})",
              f"topk(3, {G})", f"bottomk(3, {G})", f"topk by (Hostname) (1, {G})", f"bottomk without (gpu) (1, {M})",
              f"topk(0, {G})", f"topk(100, {G})", f"topk(-1, {G})", f"topk(scalar(count({G})) / 2, {M})",
              f"topk(1.5, {G})", f"topk(3, {S})", f"bottomk(3, {S})", f"topk(2, {P})", f"bottomk(2, rate({C}[5m]))",
              f"topk(2, sum by (Hostname) (rate({E}[5m])))", f"topk by (mode) (2, rate({C}[5m]))"]:
        add(s)
    # --- aggregations ---------------------------------------------------------------------------------------
    groupings = ["", " by (Hostname)", " without (gpu)", " by ()", " without ()", " by (nonexistent)",
                 " by (__name__)", " without (__name__, job, UUID)"]
    for op in SIMPLE_AGGS:
        for g in groupings:
            add(f"{op}{g} ({G})")
        for g in ["", " by (kind)", " without (kind)"]:
            add(f"{op}{g} ({S})")
        add(f'{op} by (Hostname) ({{__name__=~"DCGM_FI_DEV_(GPU|MEMORY)_TEMP"}})')
        add(f"{op} by (instance, mode) (rate({C}[5m]))")
        add(f"{op}({W})")
    for s in [f'count_values("value", {G})', f'count_values("v", {G}) by (Hostname)',
              f'count_values("Hostname", {G})', f'count_values("value", {W})', f'count_values("value", {S})',
              f'count_values without (gpu) ("temp", {G})', f'count_values("value", rate({E}[5m]))',
              f'count_values("le", {P})']:
        add(s)
    for qv in ["0", "0.25", "0.5", "0.9", "1", "-1", "2", "NaN"]:
        add(f"quantile({qv}, {G})")
    for s in [f'topk(scalar({PS}{{instance="node-a:9115"}}), {G})', f'quantile(scalar({W}{{shape="saw"}}), {G})',
              f'count_values("x", {G}) by (gpu)', f"bottomk(scalar(count({G})) - 4, {P})",
              f"absent({G}{{gpu=\"9\"}} offset 1h)", f"time() + scalar({G}{{Hostname=\"node-a\",gpu=\"0\"}})",
              f"scalar({PS}{{instance=\"node-a:9115\"}}) * {G}", f"rate({E}[5m] offset -2m)",
              f"quantile by (Hostname) (0.5, {P})", f"quantile(0.5, {S})", f"quantile without (gpu) (0.9, {M})",
              f"quantile(scalar(min({W})), {G})", f"sum by (Hostname) (rate({E}[5m])) / 1000",
              f"sum({G}) by (Hostname)", f"max({M}) by (gpu)",
              f"stddev by (Hostname) ({P} / 1000)", f"sum(sum by (Hostname) ({P}))",
              f"count(count by (Hostname) ({G}))", f"avg(1 - {PS})", f"group by (job) ({UP})",
              f"sum by (le) ({H})", f"sum(1e308 * {G})", f"avg(1e308 * {G})", f"max({S} * 0)",
              f"min by (job) ({UP} * 0 - 1)"]:
        add(s)
    # --- binary operators ---------------------------------------------------------------------------------------
    for op in ["+", "-", "*", "/", "%", "^"]:
        add(f"{G} {op} 2")
        add(f"2 {op} {G}")
        add(f"{G} {op} {M}")
        add(f"{S} {op} {S}")
    for s in [f"-{G}", f"{G} / 0", f"0 / {G}", f"{G} % -3.5", f"{W} ^ 0.5", f"{S} * 0", f"{S} % 0",
              f"{G} / -0", f"2 ^ {G}", f"{G} - {G} offset 5m", f"{G} / on(UUID) {M}", f"{G} * ignoring(gpu) {M}",
              f"{P} / on(Hostname) group_left sum by (Hostname) ({P})",
              f"sum by (Hostname) ({P}) / on(Hostname) group_right {P}",
              f"{G} * on(Hostname) group_left(rack, kernel) {INFO}", f"{INFO} * on(Hostname) group_right(rack) {G}",
              f"{G} + on(Hostname) group_left {INFO}", f"{G} + ignoring(Hostname) group_left {M}",
              f"rate({C}[5m]) / on(instance, cpu) group_left sum by (instance, cpu) (rate({C}[5m]))",
              f"{G} + on() group_left vector(1)", f"{G} - on(gpu, Hostname) {M}", f"{G} > on(UUID) {M}",
              f"{G} + on(UUID) group_left(job) {M}", f"{INFO} * on(Hostname) group_right {G}",
              f"sum by (job) ({UP}) * on(job) group_right {UP}"]:
        add(s)
    for op in ["==", "!=", ">", "<", ">=", "<="]:
        add(f"{G} {op} 50")
        add(f"{G} {op} bool 50")
        add(f"50 {op} {G}")
        add(f"{G} {op} {M}")
        add(f"{G} {op} bool {M}")
        add(f"{S} {op} bool {S}")
    for s in [f"{S} == {S}", f"{S} != {S}", f"{S} > bool 0", f"{G} == bool on(UUID) {M}", f"{PS} == 0",
              f"{UP} == 0", f"{UP} != bool 1", f"{G} > 50 > 55", f"({G} > 50) * 2", f"{G} > bool 50 > bool 0",
              f"{G} == 48", f"{G} >= {G} offset 1m"]:
        add(s)
    for s in [f"{G} and {M}", f'{G} and on(Hostname) {INFO}{{rack="r1"}}', f"{G} or {M}", f"{G} unless {M}",
              f'{G} unless on(Hostname) {INFO}{{rack="r2"}}', f"{UP} == 0 or {UP}", f"{G} or on(gpu) nonexistent_metric",
              "nonexistent_metric or " + G, f"{G} and ignoring(gpu, UUID, device) {M}", f"({G} > 50) or ({M} > 60)",
              "sum(nonexistent_metric) or vector(0)", f"absent(nonexistent_metric) or {G}",
              f"{G} unless {G} > 50", f"{F} and {F} offset 15m", f"{F} unless {F} offset 15m",
              f"{G} or {G} offset 1m", f"{PS} and on() {UP}", f"{UP} unless on(job) {PS}",
              f"({G} or {M}) and on(gpu) {G}", f"sum by (Hostname) ({G}) or {INFO}",
              f"{G} and on() vector(1)", f"{G} unless on() vector(1)"]:
        add(s)
    # --- subqueries -------------------------------------------------------------------------------------------------
    for s in [f"max_over_time({G}[30m:1m])", f"avg_over_time(rate({E}[5m])[30m:1m])", f"rate({E}[5m])[10m:1m]",
              f"{G}[5m:30s]", f"min_over_time(sum by (Hostname) ({P})[15m:])",
              f"max_over_time(deriv({F}[5m])[20m:2m] offset 5m)", f"sum_over_time({G}[10m:1m] @ end())",
              f"count_over_time({G}[1h:7m])", f"last_over_time({G}[10m:3m] offset -5m)",
              f"quantile_over_time(0.9, rate({C}[1m])[30m:45s])", f"max_over_time(max_over_time({G}[5m:1m])[30m:5m])",
              f"rate(sum({E})[10m:1m])", f"changes({G}[30m:])", f"resets({E}[30m:30s])",
              "absent_over_time(nonexistent_metric[5m:1m])", f"holt_winters({F}[20m:1m], 0.3, 0.7)",
              f"predict_linear({F}[30m:1m], 3600)", f"present_over_time({F}[10m:1m])",
              f"avg_over_time({G}[17m:1m] @ {T_AT})", f"stddev_over_time(({G} - {M})[20m:90s])",
              f"min_over_time(rate({C}[2m])[10m:])[5m:1m]", f"irate({E}[10m:30s])",
              f"increase(sum by (Hostname) ({E})[1h:5m])", f"delta(({G} > 50)[30m:2m])",
              f"sum_over_time(vector(1)[5m:1m])", f"max_over_time(timestamp({G})[10m:1m])", f"count_over_time({BATCH}[1h:10s])",
              f"last_over_time({F}[20m:1m] @ {T0 + 3000})", f"avg_over_time({S}[10m:1m])"]:
        add(s)
    # --- @ in expressions -----------------------------------------------------------------------------------------------
    for s in [f"sum({G} @ start()) - sum({G})", f"rate({E}[5m] @ end())", f"rate({E}[5m] @ {T_AT} offset 10m)",
              f"max_over_time({G}[10m] @ start())", f"{G} @ {T_AT}.123", f"{G} - {G} @ end()",
              f"sum by (Hostname) (rate({C}[5m] @ {T_AT}))", f"topk(1, {G} @ end())",
              f"avg_over_time({F}[1h] @ end() offset 30m)"]:
        add(s)
    # --- nested dashboard-like expressions ----------------------------------------------------------------------------------
    for s in [f"avg by (Hostname) ({G}) > bool 45",
              f"max by (Hostname) ({M}) - min by (Hostname) ({M})",
              f'sum by (instance) (rate({C}{{mode!="idle"}}[5m])) / count by (instance) ({C}{{mode="idle"}})',
              f'1 - avg by (instance) (rate({C}{{mode="idle"}}[5m]))', f"sum({HS}) / sum({HC})",
              f"rate({HS}[5m]) / rate({HC}[5m])", f"predict_linear({F}[1h], 4*3600) > 80000",
              f"count({G} > 60) by (Hostname)", f"({G} - scalar(avg({G}))) / scalar(stddev({G}))",
              f"abs(delta({G}[10m])) > 2", f"sum without (cpu) (rate({C}[5m]))", f"clamp_min(rate({E}[1m]), 0)",
              f'label_replace(sum by (Hostname) ({P}), "node", "$1", "Hostname", "(.*)")',
              f"sort_desc(sum by (Hostname) (rate({E}[5m])))", f"quantile by (Hostname) (0.5, rate({E}[5m]))",
              f"avg(DCGM_FI_DEV_GPU_UTIL)", f"sum by (Hostname) (rate({E}[5m])) * 3600 / 1000 / 3600",
              f'sum by (mode) (irate({C}[1m])) / ignoring(mode) group_left sum(irate({C}[1m]))',
              f"max by (Hostname) ({F}) / 81559 * 100", f"{MEM} / 1024 / 1024 / 1024",
              f"deriv({MEM}[10m]) < 0", f"avg_over_time({U}[10m]) > 40 and {G} > 45",
              f"(sum by (Hostname) ({P}) > 300) * on(Hostname) group_left(rack) {INFO}",
              f"count by (Hostname) ({G} >= 50) / count by (Hostname) ({G})",
              f"-{G} + {M} * 2 - {G} / {M} ^ 2 % 7", f"(({G}))", f"sum(({G} + 1) * 2)",
              f"floor(avg_over_time({G}[15m])) == bool ceil(avg_over_time({G}[15m]))",
              f"timestamp(sort({G}))", f"vector(1) and on() {G} > 55", f"scalar(topk(1, {G})) + 1",
              f"sum(rate({E}[5m])) by (Hostname) / on(Hostname) sum(rate({E}[5m] offset 1h)) by (Hostname)",
              f"increase({C}[1h]) / 3600", f"resets({E}[2h]) > 0", f"changes({PS}[30m]) + 0",
              f"topk(1, sum by (Hostname) ({P})) + on(Hostname) group_left {INFO}",
              f"histogram_quantile(0.5, sum by (le) (rate({H}[5m])) * 2)"]:
        add(s)
    seen, out = set(), []
    for s in q:
        if s not in seen:
            seen.add(s)
            out.append(s)
    return out


# Bad requests: (what, path, params); params None = the query runs as an
# instant query (GET) and as a range query (POST) like the good ones.
BAD_QUERIES = [
    "sum(", f"rate({E})", f"{E}[5m", "1 +", f"foo({G})", "abs()", f"abs({G}, {G})", f"rate({E}[5m], 1)",
    "{}", '{a=""}', f"{G}[5]", f"{G}[5m:1m:1m]", f"{G} offset", f"{G} @ foo()", f"{G} @ start",
    f"{G} offset 5m offset 5m", f"{G} @ 1 @ 2", f"sum by (Hostname) {G}", f"topk({G}, {M})", "1 == 1",
    '"a" + 1', f'{G} + "a"', f"{G} and 1", f"1 or {G}", f'count_values(1, {G})', f'quantile("a", {G})',
    f'label_replace({G}, "1x", "", "gpu", "")', f'label_replace({G}, "x", "", "gpu", "(")',
    f'label_join({G}, "x", "-", "1bad")', f"holt_winters({F}[10m], 1, 0.5)", f"holt_winters({F}[10m], 0.5, 0)",
    "histogram_quantile(0.5)", f"{G}[5m] + 1", f"rate({G}[5m])[5m]", f'{G}{{gpu=~"("}}',
    f'{G}{{__name__="x"}}', f"{G} + on(Hostname) {M}", f'label_replace({UP}, "instance", "", "instance", ".*")',
    f"{G} x", "1.2.3", f'{G}{{gpu="0"', "`unterminated", '-"a"', f"scalar({G}[5m])", f"vector({G})", "sort(1)",
    f"{G} @ end() @ start()", f"max_over_time({G}[5m:0s])", f"{G}[0s]", f"round({G}, {G})",
    f"{G} * on(gpu) group_left(gpu) {M}", f"topk(Inf, {G})", f"topk(NaN, {G})", f"{G} / on(Hostname) group_left {M}",
    f"{G}[1m] offset -", f"sum without() by () ({G})", '"a" == bool "a"', f"{G} offset 5", "label_replace()",
]
BAD_API = [
    ("no query parameter", "/api/v1/query", {"time": pd.fmt_time(T0 + 1800)}),
    ("empty query", "/api/v1/query", {"query": "", "time": pd.fmt_time(T0 + 1800)}),
    ("bad time", "/api/v1/query", {"query": G, "time": "abc"}),
    ("bad timeout", "/api/v1/query", {"query": G, "time": pd.fmt_time(T0), "timeout": "x"}),
    ("range: step 0", "/api/v1/query_range", {"query": G, "start": pd.fmt_time(T0), "end": pd.fmt_time(T0 + 60),
                                              "step": "0"}),
    ("range: negative step", "/api/v1/query_range", {"query": G, "start": pd.fmt_time(T0),
                                                     "end": pd.fmt_time(T0 + 60), "step": "-15"}),
    ("range: end before start", "/api/v1/query_range", {"query": G, "start": pd.fmt_time(T0 + 60),
                                                        "end": pd.fmt_time(T0), "step": "15"}),
    ("range: too many points", "/api/v1/query_range", {"query": G, "start": pd.fmt_time(T0),
                                                       "end": pd.fmt_time(T0 + 86400), "step": "1s"}),
    ("range: bad step", "/api/v1/query_range", {"query": G, "start": pd.fmt_time(T0), "end": pd.fmt_time(T0 + 60),
                                                "step": "abc"}),
    ("range: no step", "/api/v1/query_range", {"query": G, "start": pd.fmt_time(T0), "end": pd.fmt_time(T0 + 60)}),
    ("range: bad start", "/api/v1/query_range", {"query": G, "start": "yesterday", "end": pd.fmt_time(T0),
                                                 "step": "15"}),
    ("range: a string", "/api/v1/query_range", {"query": '"hello"', "start": pd.fmt_time(T0),
                                                "end": pd.fmt_time(T0 + 60), "step": "15"}),
    ("range: a range vector", "/api/v1/query_range", {"query": f"{G}[5m]", "start": pd.fmt_time(T0),
                                                      "end": pd.fmt_time(T0 + 60), "step": "15"}),
]

ORDERED_FNS = ("sort", "sort_desc", "topk", "bottomk")


def is_ordered(q):
    """Whether the top level of q is sort/sort_desc/topk/bottomk (whose
    instant results are ordered)."""
    s = q.strip()
    while s.startswith("(") and _match_paren(s, 0) == len(s) - 1:
        s = s[1:-1].strip()
    m = re.match(r"(sort_desc|sort|topk|bottomk)\s*(?:(?:by|without)\s*\([^)]*\)\s*)?\(", s)
    if not m:
        return False
    return _match_paren(s, m.end() - 1) == len(s) - 1


def _match_paren(s, i):
    depth, quote = 0, None
    while i < len(s):
        ch = s[i]
        if quote:
            if ch == "\\" and quote != "`":
                i += 1
            elif ch == quote:
                quote = None
        elif ch in "\"'`":
            quote = ch
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return -1


# ---------------------------------------------------------------------------
# comparison
# ---------------------------------------------------------------------------

def _num(s):
    try:
        return float(s)
    except (TypeError, ValueError):
        return None


def value_diff(a, b):
    """None when the sample values a and b (API strings) agree."""
    if a == b:
        return None
    fa, fb = _num(a), _num(b)
    if fa is None or fb is None:
        return f"value {a!r} vs {b!r}"
    if math.isnan(fa) and math.isnan(fb):
        return None
    if fa == fb:
        # 0 and -0: Prometheus itself answers either, by the order in
        # which a range query's aggregation meets them
        return None if fa == 0 else f"value spelled {a!r} vs {b!r}"
    if math.isinf(fa) or math.isinf(fb) or math.isnan(fa) or math.isnan(fb):
        return f"value {a} vs {b}"
    if abs(fa - fb) <= REL * max(abs(fa), abs(fb)):
        return None
    return f"value {a} vs {b} (rel {abs(fa - fb) / max(abs(fa), abs(fb)):.3g})"


def sdiff(what, a, b):
    """A difference of two strings, around where they part."""
    if not isinstance(a, str) or not isinstance(b, str) or len(a) + len(b) < 160:
        return f"{what} {a!r} vs {b!r}"
    i = 0
    while i < min(len(a), len(b)) and a[i] == b[i]:
        i += 1
    lo = max(0, i - 40)
    return (f"{what} differs at character {i} (lengths {len(a)} vs {len(b)}): "
            f"...{a[lo:i + 60]!r} vs ...{b[lo:i + 60]!r}")


def lkey(metric):
    return tuple(sorted(metric.items()))


def lstr(metric):
    name = metric.get("__name__", "")
    return name + "{" + ",".join(f'{k}="{v}"' for k, v in sorted(metric.items()) if k != "__name__") + "}"


def compare(sa, ja, ba, sb, jb, bb, ordered):
    """None when the answers agree, else the first difference (a string)."""
    if sa != sb:
        return f"HTTP status {sa} vs {sb}: {ba[:200]!r} / {bb[:200]!r}"
    if ja is None or jb is None:
        if ba != bb:
            return f"body (not JSON) {ba[:200]!r} vs {bb[:200]!r}"
        return None
    for key in ("status", "errorType", "error"):
        if ja.get(key) != jb.get(key):
            return sdiff(key, ja.get(key), jb.get(key))
    if ja.get("warnings") != jb.get("warnings"):
        return f"warnings {ja.get('warnings')!r} vs {jb.get('warnings')!r}"
    da, db = ja.get("data"), jb.get("data")
    if ja.get("status") != "success":
        return None if da == db else f"data of an error {da!r} vs {db!r}"
    if not isinstance(da, dict) or not isinstance(db, dict):
        return f"data {str(da)[:100]} vs {str(db)[:100]}"
    if da.get("resultType") != db.get("resultType"):
        return f"resultType {da.get('resultType')} vs {db.get('resultType')}"
    rt, ra, rb = da.get("resultType"), da.get("result"), db.get("result")
    if rt in ("scalar", "string"):
        if not (isinstance(ra, list) and isinstance(rb, list) and len(ra) == 2 and len(rb) == 2):
            return f"{rt} shape {ra!r} vs {rb!r}"
        if ra[0] != rb[0]:
            return f"{rt} timestamp {ra[0]} vs {rb[0]}"
        if rt == "string":
            return None if ra[1] == rb[1] else sdiff("string", ra[1], rb[1])
        return value_diff(ra[1], rb[1])
    if rt not in ("vector", "matrix") or not isinstance(ra, list) or not isinstance(rb, list):
        return f"result {str(ra)[:100]} vs {str(rb)[:100]}"
    field = "value" if rt == "vector" else "values"
    ma, mb = {}, {}
    for res, m in ((ra, ma), (rb, mb)):
        for el in res:
            k = lkey(el.get("metric", {}))
            if k in m:
                return f"duplicate series {lstr(el['metric'])} in {'first' if m is ma else 'second'} answer"
            m[k] = el.get(field)
    if ma.keys() != mb.keys():
        only_a = sorted(ma.keys() - mb.keys())
        only_b = sorted(mb.keys() - ma.keys())
        return (f"series differ ({len(ma)} vs {len(mb)}): only first {[lstr(dict(k)) for k in only_a[:2]]}, "
                f"only second {[lstr(dict(k)) for k in only_b[:2]]}")
    for k in sorted(ma.keys()):
        pa, pb = ma[k], mb[k]
        if rt == "vector":
            pa, pb = [pa], [pb]
        if not isinstance(pa, list) or not isinstance(pb, list):
            return f"{lstr(dict(k))}: points {pa!r} vs {pb!r}"
        if len(pa) != len(pb):
            ta, tb = [p[0] for p in pa], [p[0] for p in pb]
            extra_a = sorted(set(ta) - set(tb))[:3]
            extra_b = sorted(set(tb) - set(ta))[:3]
            return f"{lstr(dict(k))}: {len(pa)} vs {len(pb)} points (only first at {extra_a}, only second at {extra_b})"
        for x, y in zip(pa, pb):
            if x[0] != y[0]:
                return f"{lstr(dict(k))}: timestamp {x[0]} vs {y[0]}"
            d = value_diff(x[1], y[1])
            if d:
                return f"{lstr(dict(k))} @{x[0]}: {d}"
    if ordered and rt == "vector":
        # the order of values must agree; within a run of equal values any order
        va = [el["value"][1] for el in ra]
        vb = [el["value"][1] for el in rb]
        i = 0
        while i < len(va):
            j = i
            while j + 1 < len(va) and value_diff(va[j + 1], va[i]) is None:
                j += 1
            if any(value_diff(va[x], vb[x]) for x in range(i, j + 1)):
                return f"order differs at position {i}: {va[i]} vs {vb[i]} ({va[:6]} vs {vb[:6]})"
            sa_ = {lkey(ra[x]["metric"]) for x in range(i, j + 1)}
            sb_ = {lkey(rb[x]["metric"]) for x in range(i, j + 1)}
            if sa_ != sb_:
                return f"order differs at positions {i}..{j}: other series among equal values"
            i = j + 1
    return None


# ---------------------------------------------------------------------------
# running
# ---------------------------------------------------------------------------

def variants(q):
    """(label, method, path, params) for a good query."""
    out = []
    for label, t in INSTANTS:
        out.append((label, "GET", "/api/v1/query", {"query": q, "time": t}))
    for label, start, end, step in RANGES:
        out.append((label, "POST", "/api/v1/query_range", {"query": q, "start": start, "end": end, "step": step}))
    return out


def bad_variants():
    out = []
    for q in BAD_QUERIES:
        out.append((q, "instant@00:30", "GET", "/api/v1/query", {"query": q, "time": pd.fmt_time(T0 + 1800)}))
        out.append((q, "range step 1m", "POST", "/api/v1/query_range",
                    {"query": q, "start": pd.fmt_time(T0), "end": pd.fmt_time(T0 + 7200), "step": "60"}))
    for what, path, params in BAD_API:
        out.append((what, "api", "GET", path, params))
    return out


class Perturb:
    """Self-test: changes the second answer of some variants in known ways
    and records whether the comparison must catch it."""

    KINDS = ["value+1e-8", "value+1e-12", "drop-series", "label", "timestamp", "error-text", "swap-order",
             "respell"]

    def __init__(self):
        self.n = 0
        self.expect = {}  # variant id -> (kind, must be caught)
        self.done = {k: 0 for k in self.KINDS}

    def apply(self, vid, j, ordered):
        """Returns a perturbed copy of the decoded answer j, or None."""
        self.n += 1
        if self.n % 5 != 0 or j is None:
            return None
        kinds = [k for k in self.KINDS if self.done[k] < 6]
        if not kinds:
            return None
        import copy
        for kind in sorted(kinds, key=lambda k: self.done[k]):
            x = copy.deepcopy(j)
            caught = self._mutate(kind, x, ordered)
            if caught is not None:
                self.done[kind] += 1
                self.expect[vid] = (kind, caught)
                return x
        return None

    @staticmethod
    def _first_value(x):
        d = x.get("data") or {}
        res = d.get("result")
        if d.get("resultType") == "vector" and res:
            return res[0]["value"]
        if d.get("resultType") == "matrix" and res and res[0]["values"]:
            return res[0]["values"][len(res[0]["values"]) // 2]
        if d.get("resultType") == "scalar":
            return res
        return None

    def _mutate(self, kind, x, ordered):
        if kind == "error-text":
            if x.get("status") != "error":
                return None
            x["error"] = x.get("error", "") + " (changed)"
            return True
        if x.get("status") != "success":
            return None
        d = x["data"]
        res = d.get("result")
        if kind in ("value+1e-8", "value+1e-12", "respell"):
            pt = self._first_value(x)
            if pt is None:
                return None
            v = _num(pt[1])
            if v is None or math.isnan(v) or math.isinf(v) or v == 0:
                return None
            if kind == "respell":  # the same number, spelled otherwise
                if "e" in pt[1]:
                    return None
                pt[1] = pt[1] + ("0" if "." in pt[1] else ".0")
                return True
            pt[1] = repr(v * (1 + (1e-8 if kind == "value+1e-8" else 1e-12)))
            return kind == "value+1e-8"
        if kind == "drop-series":
            if d.get("resultType") not in ("vector", "matrix") or not res:
                return None
            res.pop()
            return True
        if kind == "label":
            if d.get("resultType") not in ("vector", "matrix") or not res:
                return None
            res[0]["metric"]["zz_extra"] = "1"
            return True
        if kind == "timestamp":
            pt = self._first_value(x)
            if pt is None:
                return None
            pt[0] = pt[0] + 0.001
            return True
        if kind == "swap-order":
            if not ordered or d.get("resultType") != "vector" or not res or len(res) < 2:
                return None
            for i in range(len(res) - 1):
                if value_diff(res[i]["value"][1], res[i + 1]["value"][1]):
                    res[i], res[i + 1] = res[i + 1], res[i]
                    return True
            return None
        return None


class StaleTarget:
    """A scrape target for the live staleness check: stale_test{series="keep"}
    and stale_test{series="vanish"} until vanish() drops the second one, so
    each scraper writes a real stale marker for it (something OpenMetrics
    text cannot carry)."""

    def __init__(self):
        import http.server
        import threading
        target = self
        self.gone = False

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                body = '# TYPE stale_test gauge\nstale_test{series="keep"} 1\n'
                if not target.gone:
                    body += 'stale_test{series="vanish"} 2\n'
                data = body.encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                try:
                    self.wfile.write(data)
                except OSError:  # the scraper gave up (timeout): its problem, not ours
                    pass

            def log_message(self, *a):
                pass

        self.srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.addr = f"127.0.0.1:{self.srv.server_address[1]}"
        self.thread = threading.Thread(target=self.srv.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.srv.shutdown()
        self.srv.server_close()


LIVE_QUERIES = [
    "stale_test", 'stale_test{series="vanish"}', "last_over_time(stale_test[5m])", "max_over_time(stale_test[5m])",
    "min_over_time(stale_test[5m])", 'absent(stale_test{series="vanish"})', "count_over_time(stale_test[5m]) > bool 0",
    "present_over_time(stale_test[5m])", "group by (series) (stale_test)", "sum(stale_test)",
    'stale_test{series="vanish"} or vector(0)', "changes(stale_test[5m])", "stale_test offset 0s",
    "avg_over_time(stale_test[1m:1s])", 'absent_over_time(stale_test{series="vanish"}[5m])',
]


def _instant_value(side, q, t):
    st, j, _ = side.ask("GET", "/api/v1/query", {"query": q, "time": pd.fmt_time(t)})
    if st != 200 or not j or j.get("status") != "success" or not j["data"]["result"]:
        return None
    return float(j["data"]["result"][0]["value"][1])


def live_staleness(sides, target, failures, deadline):
    """Both servers scrape the target; one series vanishes; after both
    wrote its stale marker, instant and range queries must agree (and the
    marker must hide the series, as in Prometheus)."""
    end = min(deadline, time.time() + 30)
    while time.time() < end:  # >= 3 scrapes of both series everywhere
        n = [_instant_value(s, 'count_over_time(stale_test{series="vanish"}[5m])', time.time()) for s in sides]
        if all(x is not None and x >= 3 for x in n):
            break
        time.sleep(0.3)
    else:
        failures.append(("(live staleness)", "setup", f"the target was not scraped 3 times in time: {n}"))
        return 0
    t_flip = time.time()
    target.gone = True
    marks = []
    end = min(deadline, time.time() + 20)
    for s in sides:  # a scrape after the flip: the one that wrote the marker
        while time.time() < end:
            ts = _instant_value(s, 'timestamp(stale_test{series="keep"})', time.time())
            if ts is not None and ts > t_flip + 0.05:
                marks.append(ts)
                break
            time.sleep(0.2)
    if len(marks) != len(sides):
        failures.append(("(live staleness)", "setup", "no scrape after the series vanished"))
        return 0
    time.sleep(0.3)
    t_q = time.time()
    t_m = max(marks) + 0.001
    n = 0
    for q in LIVE_QUERIES:
        for label, method, path, params in [
                ("live instant", "GET", "/api/v1/query", {"query": q, "time": pd.fmt_time(t_q)}),
                ("live range after the marker", "POST", "/api/v1/query_range",
                 {"query": q, "start": pd.fmt_time(t_m), "end": pd.fmt_time(t_q), "step": "0.1"})]:
            sa, ja, ba = sides[0].ask(method, path, params)
            sb, jb, bb = sides[1].ask(method, path, params)
            n += 1
            d = compare(sa, ja, ba, sb, jb, bb, False)
            if d:
                failures.append((q, label, d))
    # the marker hides the vanished series in Prometheus (it would show for 5 m without one)
    if _instant_value(sides[0], 'count(stale_test{series="vanish"})', t_q) is not None:
        failures.append(("(live staleness)", "check", "Prometheus still shows the vanished series"))
    return n


def log_tail(path, n=1500):
    try:
        with open(path, errors="replace") as f:
            return f.read()[-n:].strip()
    except (OSError, TypeError):
        return ""


class Side:
    def __init__(self, name, port):
        self.name, self.api = name, pd.Api(port, timeout=60)

    def ask(self, method, path, params):
        status, body, _ = self.api.request(method, path, params)
        return status, pd.decode(body), body


def wait_ready(port, proc, what, deadline=60):
    kt.wait_http(f"http://127.0.0.1:{port}/-/ready", deadline=deadline, proc=proc)
    # the query API answers (kelvin's may not exist yet: say so clearly)
    st, body, _ = pd.Api(port, 10).query("1", pd.fmt_time(T0))
    if st != 200:
        raise AssertionError(f"{what} does not answer /api/v1/query yet: HTTP {st} {body[:200]!r}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--self-test", action="store_true")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--filter")
    ap.add_argument("--max-failures", type=int, default=60)
    ap.add_argument("--strict-bytes", action="store_true")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    ap.add_argument("--no-live", action="store_true", help="skip the live staleness check (real stale markers)")
    args = ap.parse_args()

    qs = queries()
    if args.filter:
        qs = [q for q in qs if re.search(args.filter, q)]
    if args.list:
        for q in qs:
            print(q)
        print(f"# {len(qs)} queries, {len(BAD_QUERIES)} bad queries, {len(BAD_API)} bad API requests",
              file=sys.stderr)
        return 0

    failures, harness = [], []
    target = kproc = klog = None
    tmp = tempfile.mkdtemp(prefix="kelvin-promql-diff-")
    t_start = time.time()
    pool = concurrent.futures.ThreadPoolExecutor(1)
    try:
        for b in (PROMETHEUS, PROMTOOL):
            if not os.access(b, os.X_OK):
                raise AssertionError(f"{b} not found: run scripts/peers to fetch Prometheus 2.42")
        om = os.path.join(tmp, "diff.om")
        meta = pd.write_diff_dataset(om)
        cfg = os.path.join(tmp, "prometheus.yml")
        target = None if args.no_live else StaleTarget()
        pd.write_empty_config(cfg, target.addr if target else None)
        pdir, kdir = os.path.join(tmp, "prom"), os.path.join(tmp, "kelvin")
        pd.backfill(PROMTOOL, om, pdir)
        pport = kt.free_port()
        pproc = kt.start(pd.prometheus_cmd(PROMETHEUS, pdir, cfg, pport), log=os.path.join(tmp, "prometheus.log"))
        wait_ready(pport, pproc, "Prometheus")
        a = Side("prometheus", pport)
        if args.self_test:
            b = Side("prometheus(again)", pport)
        else:
            if not os.access(kt.KELVIN, os.X_OK):
                raise AssertionError(f"KELVIN_BIN {kt.KELVIN} is not an executable")
            pd.backfill(kt.KELVIN, om, kdir)
            kport = kt.free_port()
            klog = os.path.join(tmp, "kelvin.log")
            kproc = kt.start(pd.kelvin_server_cmd(kt.KELVIN, kdir, cfg, kport), log=klog)
            wait_ready(kport, kproc, "kelvin server")
            b = Side("kelvin", kport)
        perturb = Perturb()
        print(f"data: {meta['series']} series, {meta['samples']} samples, "
              f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(meta['t0']))} + 2 h; "
              f"setup {time.time() - t_start:.1f} s", flush=True)

        work = []  # (query, variant label, method, path, params, ordered, good)
        for q in qs:
            for label, method, path, params in variants(q):
                work.append((q, label, method, path, params, is_ordered(q) and path == "/api/v1/query", True))
        for q, label, method, path, params in bad_variants():
            if args.filter and not re.search(args.filter, q):
                continue
            work.append((q, label, method, path, params, False, False))

        n_cmp = n_same_bytes = n_nonempty = 0
        good_ok = {}  # query -> some variant succeeded on Prometheus
        good_data = {}  # query -> some variant had data
        bad_failed = {}
        caught = {}
        deadline = t_start + DEADLINE
        for vid, (q, label, method, path, params, ordered, good) in enumerate(work):
            if time.time() > deadline:
                harness.append(f"ran out of time (DIFF_DEADLINE={DEADLINE:.0f} s) after {vid} of {len(work)} variants")
                break
            fut = pool.submit(a.ask, method, path, params)
            sb, jb, bb = b.ask(method, path, params)
            sa, ja, ba = fut.result()
            n_cmp += 1
            if ba == bb:
                n_same_bytes += 1
            if args.self_test:  # the second answer, perturbed, stands in for it
                pj = perturb.apply(vid, jb, ordered)
                if pj is not None:
                    jb, bb = pj, b"(perturbed)"
            else:  # the comparison must catch a perturbed copy of Prometheus's answer
                pj = perturb.apply(vid, ja, ordered)
                if pj is not None:
                    kind, must = perturb.expect[vid]
                    d = compare(sa, ja, ba, sa, pj, b"(perturbed)", ordered)
                    caught.setdefault(kind, []).append((must, d is not None, q, label, d))
            d = compare(sa, ja, ba, sb, jb, bb, ordered)
            if args.self_test and vid in perturb.expect:
                kind, must = perturb.expect[vid]
                caught.setdefault(kind, []).append((must, d is not None, q, label, d))
                d = None
            elif d is None and args.strict_bytes and ba != bb:
                d = "bodies differ byte-wise (decoded answers agree): " + sdiff(
                    "body", ba.decode("utf-8", "replace"), bb.decode("utf-8", "replace"))
            if d:
                failures.append((q, label, d))
            ok = ja is not None and ja.get("status") == "success"
            if good:
                good_ok[q] = good_ok.get(q, False) or ok
                res = (ja or {}).get("data", {}).get("result") if ok else None
                has = bool(res)
                if has:
                    n_nonempty += 1
                good_data[q] = good_data.get(q, False) or has
            else:
                bad_failed[(q, label)] = not ok
        n_live = 0
        if target is not None and time.time() < deadline:
            n_live = live_staleness([a, b], target, failures, deadline)
            target.close()
            target = None
        if kproc is not None:  # a clean exit: no crash, no sanitizer report
            rc = kt.stop(kproc, timeout=30)
            if rc != 0:
                failures.append(("(kelvin server)", "exit", f"exited with {rc} after SIGTERM: {log_tail(klog)}"))
            kproc = None
        elapsed = time.time() - t_start
        n_good = len(qs)
        n_bad = len(BAD_QUERIES) + len(BAD_API)
        print(f"{n_good} queries ({len(work) - sum(1 for w in work if not w[6])} variants), {n_bad} bad requests; "
              f"{n_cmp} variants compared, {n_nonempty} good variants with data, "
              f"{n_same_bytes} byte-identical; {n_live} live staleness variants; {len(failures)} differences; "
              f"{elapsed:.1f} s "
              f"({a.name} vs {b.name})")
        used = {f for f in FUNCTIONS_242 if any(re.search(r"\b" + f + r"\s*\(", q) for q in qs)}
        if not args.filter:
            missing = [f for f in FUNCTIONS_242 if f not in used]
            if missing:
                harness.append(f"functions never used: {missing}")
            for op in AGGREGATIONS:
                if not any(re.search(r"\b" + op + r"\b", q) for q in qs):
                    harness.append(f"aggregation never used: {op}")
        # the harness's own checks (its query lists and its comparison)
        for q, ok in good_ok.items():
            if not ok:
                harness.append(f"good query fails on Prometheus in every variant: {q}")
        empty = [q for q, has in good_data.items() if not has]
        if empty and args.self_test:
            print(f"  ({len(empty)} good queries return no data in any variant: {empty[:40]})")
        if len(empty) > 0.08 * max(1, len(good_data)):
            harness.append(f"too many good queries without data: {len(empty)}")
        for (q, label), failed in bad_failed.items():
            if not failed and label != "range step 1m":
                harness.append(f"bad request succeeds on Prometheus: {q} ({label})")
        if len(work) == n_cmp:
            for kind in Perturb.KINDS:
                got = caught.get(kind, [])
                if not got and not args.filter:
                    harness.append(f"perturbation {kind} was never applied")
                for must, was, q, label, d in got:
                    if must != was:
                        harness.append(f"perturbation {kind} on {q!r} ({label}): "
                                       f"{'missed' if must else 'flagged wrongly: ' + str(d)}")
            print("  comparison self-check, perturbed answers: "
                  + ", ".join(f"{k} {len(caught.get(k, []))}" for k in Perturb.KINDS))
        if len(qs) < 500 and not args.filter:
            harness.append(f"only {len(qs)} queries (want >= 500)")
    except Exception:
        import traceback
        harness.append("exception: " + traceback.format_exc().strip())
        if kproc is not None and kproc.poll() is not None:
            harness.append(f"kelvin server exited with {kproc.returncode}: {log_tail(klog)}")
    finally:
        pool.shutdown(wait=False)
        if target is not None:
            target.close()
        kt.stop_all()
        if args.keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    by_query = {}
    for q, label, d in failures:
        by_query.setdefault(q, []).append((label, d))
    if by_query:
        print(f"{len(by_query)} queries differ:")
        for i, (q, items) in enumerate(by_query.items()):
            if i >= args.max_failures:
                print(f"  ... and {len(by_query) - i} more")
                break
            label, d = items[0]
            print(f"  - {q}  [{label}; {len(items)} variant(s)]: {d}")
    for h in harness:
        print(f"  HARNESS: {h}")
    if failures or harness:
        print("promql_diff: FAILED")
        return 1
    print("promql_diff: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
