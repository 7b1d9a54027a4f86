"""tests/lib/grafana_model.py -- what Grafana does with a dashboard's PromQL,
for tests that run a dashboard's queries against kelvin server.

Reads a Grafana 9/10 dashboard model (JSON): every panel's targets (rows and
collapsed rows' nested panels too), the Prometheus annotation queries and the
template variables. Resolves variables the way Grafana's Prometheus data
source does -- label_values(metric, label) through /api/v1/series (Grafana 9)
and /api/v1/label/<label>/values?match[]= (Grafana 10), label_values(label),
label_names(), metrics(regex), query_result(expr), custom, constant and
textbox variables, each variable's regex -- and interpolates them:
multi-value and include-All variables become an escaped regex alternation
(a|b), others their value; $__interval, $__rate_interval, $__range follow
Grafana's arithmetic (interval = time range / max data points rounded by
Grafana's table and floored at the data source's scrape interval;
rate interval = max(interval + scrape, 4 x scrape)).

Standard library only. Nothing here starts processes; callers pass a
`query` object with get(path, params) and post(path, params) that return
the API's decoded JSON answer or raise.
"""
import json
import re

BUILTINS = {"__interval", "__interval_ms", "__rate_interval", "__range", "__range_s", "__range_ms", "__from",
            "__to", "__dashboard", "__org", "__user", "__name", "timeFilter", "__timeFilter", "datasource",
            "__all", "__auto_interval", "__url_time_range", "__field", "__series", "__value", "__data",
            "__cell", "__schema"}

VAR_REF = re.compile(r"\$\{(\w+)(?::(\w+))?\}|\[\[(\w+)(?::(\w+))?\]\]|\$(\w+)")

_ROUND = [(15, 10), (35, 20), (75, 50), (150, 100), (350, 200), (750, 500), (1500, 1000), (3500, 2000),
          (7500, 5000), (12500, 10000), (17500, 15000), (25000, 20000), (45000, 30000), (90000, 60000),
          (210000, 120000), (450000, 300000), (1050000, 600000), (2100000, 1200000), (5400000, 3600000),
          (9000000, 7200000), (16200000, 10800000), (32400000, 21600000), (86400000, 43200000),
          (604800000, 86400000), (1814400000, 604800000), (3628800000, 2592000000)]

SCREEN_PX = 1920  # the width a 24-column dashboard is drawn at, for panels without maxDataPoints


def round_interval_ms(ms):
    """Grafana's kbn.roundInterval."""
    for limit, value in _ROUND:
        if ms < limit:
            return value
    return 31536000000


DURATION = re.compile(r"^(?:(\d+)y)?(?:(\d+)w)?(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?(?:(\d+)ms)?$")


def parse_duration_ms(s):
    """A Prometheus/Grafana duration ("15s", "1m30s", "5m") in ms; None if not one."""
    s = s.strip()
    if s.startswith(">"):
        s = s[1:]
    m = DURATION.match(s)
    if not s or not m or not any(m.groups()):
        return None
    mult = [31536000000, 604800000, 86400000, 3600000, 60000, 1000, 1]
    return sum(int(g) * k for g, k in zip(m.groups(), mult) if g)


def format_duration_ms(ms):
    """ms as a Prometheus duration ("4s", "1m1s", "200ms")."""
    if ms <= 0:
        return "0s"
    out = ""
    for unit, k in (("d", 86400000), ("h", 3600000), ("m", 60000), ("s", 1000), ("ms", 1)):
        if ms >= k:
            out += f"{ms // k}{unit}"
            ms %= k
    return out


# ---- the dashboard model ------------------------------------------------------

def walk_panels(panels):
    """Every panel, depth first, rows' nested panels included."""
    for p in panels or []:
        yield p
        yield from walk_panels(p.get("panels"))


class Query:
    """One PromQL expression of a dashboard and where it comes from."""

    def __init__(self, where, expr, panel=None, target=None):
        self.where = where      # "panel 'GPU utilisation' A", "annotation 'Alerts'", ...
        self.expr = expr
        self.panel = panel or {}
        self.target = target or {}


def queries(dash):
    """Every PromQL expression of a dashboard: panel targets (hidden ones
    too) and Prometheus annotations, in order."""
    out = []
    for p in walk_panels(dash.get("panels")):
        for t in p.get("targets") or []:
            if "expr" in t:
                out.append(Query(f"panel {p.get('title')!r} target {t.get('refId')}", t["expr"], p, t))
    for a in (dash.get("annotations") or {}).get("list") or []:
        if a.get("builtIn"):
            continue
        expr = a.get("expr") or (a.get("target") or {}).get("expr")
        if expr is not None:
            out.append(Query(f"annotation {a.get('name')!r}", expr, {}, a))
    return out


def variables(dash):
    return (dash.get("templating") or {}).get("list") or []


def variable_query(v):
    q = v.get("query")
    if isinstance(q, dict):
        q = q.get("query", "")
    return q or ""


def referenced(text):
    """Names of the variables a string refers to."""
    out = []
    for m in VAR_REF.finditer(text):
        out.append(m.group(1) or m.group(3) or m.group(5))
    return out


def custom_options(v):
    """[(text, value)] of a custom variable, from its query ("a,b" or "text : value")."""
    out = []
    for part in re.split(r"(?<!\\),", variable_query(v)):
        part = part.strip().replace("\\,", ",")
        if not part:
            continue
        m = re.match(r"^(.+?)\s+:\s+(.+)$", part)
        out.append((m.group(1), m.group(2)) if m else (part, part))
    return out


# ---- escaping as Grafana's Prometheus data source does ------------------------

def regular_escape(value):
    """prometheusRegularEscape: for a single value inside a PromQL string."""
    return value.replace("\\", "\\\\").replace("'", "\\\\'")


def regex_escape(value):
    """prometheusSpecialRegexEscape: a value inside a regex inside a PromQL string."""
    v = value.replace("\\", "\\\\\\\\")
    v = re.sub(r"[$^*{}\[\]'+?.()|]", lambda m: "\\\\" + m.group(0), v)
    return v


class Var:
    """A resolved variable: its values, and whether Grafana formats it as a
    regex (multi or include All)."""

    def __init__(self, name, values, regex_fmt, all_value=None, texts=None):
        self.name = name
        self.values = values
        self.regex_fmt = regex_fmt
        self.all_value = all_value
        self.texts = texts or values


def format_value(var, values, fmt=None, use_all=False):
    if use_all and var.all_value is not None:
        return var.all_value
    if fmt in ("raw", "text"):
        return ",".join(values)
    if fmt == "pipe":
        return "|".join(values)
    if fmt in ("csv",):
        return ",".join(values)
    if fmt == "regex" or var.regex_fmt:
        esc = [regex_escape(v) for v in values]
        return esc[0] if len(esc) == 1 else "(" + "|".join(esc) + ")"
    return regular_escape(values[0]) if values else ""


def interpolate(text, ctx, builtins, use_all=False):
    """text with every variable replaced; ctx: {name: (Var, [values])};
    builtins: {"__interval": "1s", ...}. Unknown names are left as they are
    (the caller reports them)."""

    def repl(m):
        name = m.group(1) or m.group(3) or m.group(5)
        fmt = m.group(2) or m.group(4)
        if name in builtins:
            return builtins[name]
        if name in ctx:
            var, vals = ctx[name]
            if fmt == "text":
                return ",".join(var.texts[var.values.index(v)] if v in var.values else v for v in vals)
            return format_value(var, vals, fmt, use_all)
        return m.group(0)

    return VAR_REF.sub(repl, text)


def split_args(s):
    """Top-level comma-separated arguments of a function call body."""
    out, depth, cur, quote = [], 0, "", None
    i = 0
    while i < len(s):
        c = s[i]
        if quote:
            cur += c
            if c == "\\" and i + 1 < len(s):
                cur += s[i + 1]
                i += 1
            elif c == quote:
                quote = None
        elif c in "\"'`":
            quote = c
            cur += c
        elif c in "([{":
            depth += 1
            cur += c
        elif c in ")]}":
            depth -= 1
            cur += c
        elif c == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += c
        i += 1
    if cur.strip():
        out.append(cur.strip())
    return out


def apply_regex(values, regex):
    """A variable's regex field: keep matching values, or the first capture group."""
    if not regex:
        return values
    r = regex
    m = re.match(r"^/(.*)/([gimsuy]*)$", r)
    flags = 0
    if m:
        r = m.group(1)
        flags = re.I if "i" in m.group(2) else 0
    rx = re.compile(r, flags)
    out = []
    for v in values:
        mm = rx.search(v)
        if not mm:
            continue
        val = mm.group(1) if mm.groups() and mm.group(1) is not None else v
        if val not in out:
            out.append(val)
    return out


def series_text(s):
    """A query_result line as Grafana renders it: name{l="v", ...} value timestamp."""
    metric = dict(s.get("metric") or {})
    name = metric.pop("__name__", "")
    labels = ", ".join(f'{k}="{v}"' for k, v in sorted(metric.items()))
    ts, val = s["value"]
    return f"{name}{{{labels}}} {val} {int(float(ts) * 1000)}"


def resolve_query_variable(api, q, start, end, problems, where):
    """The values of a Prometheus query variable's (already interpolated) query."""
    q = q.strip()
    m = re.match(r"^label_values\((.*)\)\s*$", q, re.S)
    if m:
        args = split_args(m.group(1))
        if len(args) == 1:
            d = api.get(f"/api/v1/label/{args[0]}/values", [("start", str(start)), ("end", str(end))])
            return sorted(d)
        if len(args) != 2:
            problems.append(f"{where}: cannot read label_values arguments {args!r}")
            return []
        metric, label = args
        series = api.post("/api/v1/series", [("match[]", metric), ("start", str(start)), ("end", str(end))])
        via_series = sorted({s[label] for s in series if label in s})
        via_values = sorted(api.get(f"/api/v1/label/{label}/values",
                                    [("match[]", metric), ("start", str(start)), ("end", str(end))]))
        if via_series != via_values:
            problems.append(f"{where}: /api/v1/series gives {via_series} but /api/v1/label/{label}/values "
                            f"gives {via_values} (Grafana 9 and 10 would disagree)")
        return via_series
    m = re.match(r"^label_names\((.*)\)\s*$", q, re.S)
    if m:
        return sorted(api.get("/api/v1/labels", [("start", str(start)), ("end", str(end))]))
    m = re.match(r"^metrics\((.*)\)\s*$", q, re.S)
    if m:
        names = api.get("/api/v1/label/__name__/values", [("start", str(start)), ("end", str(end))])
        rx = re.compile(m.group(1).strip())
        return sorted(n for n in names if rx.search(n))
    m = re.match(r"^query_result\((.*)\)\s*$", q, re.S)
    if m:
        d = api.post("/api/v1/query", [("query", m.group(1)), ("time", str(end))])
        if d.get("resultType") == "vector":
            return [series_text(s) for s in d["result"]]
        problems.append(f"{where}: query_result gave a {d.get('resultType')}, not a vector")
        return []
    # a plain expression: Grafana runs it as query_result
    d = api.post("/api/v1/query", [("query", q), ("time", str(end))])
    return [series_text(s) for s in d.get("result") or []] if d.get("resultType") == "vector" else []


def resolve_variables(api, dash, start, end, scrape_ms, problems, label):
    """{name: (Var, [values])} for every variable, in order (a variable's
    query sees the variables above it, all values selected). Problems (a
    variable without values, an unknown variable type) are appended."""
    ctx = {}
    rng = int(round(end - start))
    builtins = {"__interval": format_duration_ms(scrape_ms), "__rate_interval": format_duration_ms(4 * scrape_ms),
                "__range": f"{rng}s", "__range_s": str(rng), "__range_ms": str(rng * 1000)}
    for v in variables(dash):
        name, typ = v.get("name"), v.get("type")
        where = f"{label}: variable {name!r}"
        multi = bool(v.get("multi")) or bool(v.get("includeAll"))
        if typ == "datasource":
            continue
        if typ == "query":
            q = interpolate(variable_query(v), ctx, builtins)
            left = [n for n in referenced(q) if n not in BUILTINS]
            if left:
                problems.append(f"{where}: query {variable_query(v)!r} refers to undefined variables {left}")
                continue
            try:
                vals = resolve_query_variable(api, q, start, end, problems, where)
            except Exception as e:  # noqa: BLE001 - reported with the variable's name
                problems.append(f"{where}: query {q!r} failed: {e}")
                continue
            vals = apply_regex(vals, v.get("regex") or "")
            if v.get("sort") in (2, 4, 6):
                vals = sorted(vals, reverse=True)
            if not vals:
                problems.append(f"{where}: query {q!r} returned no values")
                continue
            ctx[name] = (Var(name, vals, multi, v.get("allValue") or None), vals)
        elif typ == "custom":
            opts = custom_options(v)
            if not opts:
                problems.append(f"{where}: custom variable without options")
                continue
            vals = [o[1] for o in opts]
            cur = (v.get("current") or {}).get("value")
            chosen = [cur] if isinstance(cur, str) and cur in vals else vals[:1]
            if multi:
                chosen = vals
            ctx[name] = (Var(name, vals, multi, v.get("allValue") or None, [o[0] for o in opts]), chosen)
        elif typ in ("constant", "textbox"):
            val = variable_query(v)
            ctx[name] = (Var(name, [val], False), [val])
        elif typ == "interval":
            opts = [o.strip() for o in variable_query(v).split(",") if o.strip()]
            cur = (v.get("current") or {}).get("value") or (opts[0] if opts else "1m")
            ctx[name] = (Var(name, opts or [cur], False), [cur])
        elif typ == "adhoc":
            continue
        else:
            problems.append(f"{where}: variable type {typ!r} is not handled")
    return ctx


def panel_width_px(panel):
    w = (panel.get("gridPos") or {}).get("w", 24)
    return max(1, int(w * SCREEN_PX / 24))


def panel_intervals(panel, target, range_s, scrape_ms):
    """(interval ms, rate interval ms, max data points) for a panel's query
    over range_s seconds, as Grafana computes them."""
    max_dp = panel.get("maxDataPoints") or panel_width_px(panel)
    low = scrape_ms
    for src in (target.get("interval"), panel.get("interval")):
        if src:
            ms = parse_duration_ms(src)
            if ms:
                low = max(low, ms)
                break
    interval = round_interval_ms(range_s * 1000 / max_dp)
    interval = max(interval, low)
    rate = max(interval + scrape_ms, 4 * scrape_ms)
    return interval, rate, max_dp


def builtins_for(panel, target, start, end, scrape_ms):
    rng = int(round(end - start))
    interval, rate, _ = panel_intervals(panel, target, rng, scrape_ms)
    return {"__interval": format_duration_ms(interval), "__interval_ms": str(interval),
            "__rate_interval": format_duration_ms(rate), "__range": f"{rng}s",
            "__range_s": str(rng), "__range_ms": str(rng * 1000),
            "__from": str(int(start * 1000)), "__to": str(int(end * 1000))}, interval


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)
