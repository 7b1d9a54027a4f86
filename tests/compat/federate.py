#!/usr/bin/python3
"""kelvin server's /federate against Prometheus 2.42's, on the same data.

kelvin and Prometheus A scrape the same fixed exposition on loopback every
second (same job, same external labels): gauges and counters with escaped,
non-ASCII and upper-case label names and values, special values, a series
with its own `instance` and `job` labels, and a series that vanishes after
a few seconds (a staleness marker in both). Then:

1. the /federate bodies of kelvin and A for a dozen match[] sets (several
   selectors at once, overlapping ones, regexes, a selector matching
   nothing, one matching "" only, none at all) are equal byte for byte once
   each sample line's timestamp is cut off (the two scrape at different
   moments); every timestamp is a recent one; the Content-Type is the same;
2. bad selectors, the methods (405 with Allow, OPTIONS) and gzip answer
   the same on both;
3. Prometheus B federates from both (honor_labels: true, match[] of the
   fixture's series and `up`; metric_relabel_configs tag each source) and
   holds the same series and values from kelvin as from A -- external
   labels included, `instance=""` dropped as empty.
"""
import gzip
import json
import os
import re
import shutil
import sys
import tempfile
import time
import urllib.parse
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import kelvintest as kt  # noqa: E402
from fixture_targets import FixtureServer, Target  # noqa: E402

PROMETHEUS = os.path.join(kt.PEERS, "bin", "prometheus")
EXTERNAL = "  external_labels: {region: eu-west, replica: a}\n"

BASE = """# TYPE fed_temp gauge
fed_temp{gpu="0",model="H100 \\"SXM\\""} 41
fed_temp{gpu="1",model="H100 \\"SXM\\""} 42.5
fed_temp{gpu="2",path="C:\\\\x",note="two\\nlines"} -3.25
# TYPE fed_energy_total counter
fed_energy_total{gpu="0"} 1.234e+06
fed_energy_total{gpu="1"} 5e-07
fed_special{v="nan"} NaN
fed_special{v="inf"} +Inf
fed_special{v="ninf"} -Inf
fed_special{v="zero"} 0
fed_special{v="one"} 1
fed_special{v="minus_one"} -1
fed_special{v="big"} 1.7976931348623157e+308
fed_upper{Zone="b",lower="x"} 3
fed_upper{Alpha="a"} 2
fed_unicode{name="h\u00e9llo \u2713"} 7
fed_own_labels{instance="custom:1",job="other",region="us"} 9
aaa_first 1
""" + "".join('fed_mixed{%s="%d"} %d\n' % ("ABCabcXYZxyz"[i % 12], (i * 7919) % 101, i) for i in range(40))


def exposition(vanish_at):
    def body(n):
        b = BASE
        if time.time() < vanish_at:
            b += "fed_vanishing 1\n"
        return b
    return body


def start_kelvin(work, config):
    cfg = os.path.join(work, "kelvin.yml")
    with open(cfg, "w") as f:
        f.write(config)
    port = kt.free_port()
    p = kt.start([kt.KELVIN, "server", f"--config.file={cfg}", f"--storage.tsdb.path={os.path.join(work, 'kelvin')}",
                  f"--web.listen-address=127.0.0.1:{port}"], log=os.path.join(work, "kelvin.log"))
    url = f"http://127.0.0.1:{port}"
    kt.wait_http(url + "/-/ready", deadline=30, proc=p)
    return p, url


def start_prometheus(work, name, config):
    cfg = os.path.join(work, name + ".yml")
    with open(cfg, "w") as f:
        f.write(config)
    port = kt.free_port()
    p = kt.start([PROMETHEUS, f"--config.file={cfg}", f"--storage.tsdb.path={os.path.join(work, name)}",
                  f"--web.listen-address=127.0.0.1:{port}"], log=os.path.join(work, name + ".log"))
    url = f"http://127.0.0.1:{port}"
    kt.wait_http(url + "/-/ready", deadline=60, proc=p)
    return p, url


def federate(url, matches, method="GET", headers=None):
    q = urllib.parse.urlencode([("match[]", m) for m in matches])
    st, hdrs, body = kt.http(url + "/federate" + ("?" + q if q else ""), method, None, headers)
    return st, hdrs, body


SAMPLE = re.compile(rb"^(.*) (-?\d+)$")


def strip_timestamps(f, who, body, now_ms):
    """The body without each sample line's timestamp; checks each is recent."""
    out = []
    for line in body.split(b"\n"):
        if line and not line.startswith(b"#"):
            m = SAMPLE.match(line)
            if not f.check(m is not None, f"{who}: a sample line without a timestamp: {line!r}"):
                continue
            ts = int(m.group(2))
            f.check(now_ms - 5 * 60 * 1000 <= ts <= now_ms + 1000, f"{who}: timestamp {ts} not recent: {line!r}")
            line = m.group(1)
        out.append(line)
    return b"\n".join(out)


def query(url, q):
    st, _, b = kt.http(url + "/api/v1/query?" + urllib.parse.urlencode({"query": q}))
    if st != 200:
        raise AssertionError(f"{url} query {q!r}: HTTP {st} {b[:300]!r}")
    return json.loads(b)["data"]["result"]


MATCH_SETS = [
    ['{__name__=~"fed_.+"}'],
    ["fed_temp", 'fed_temp{gpu="1"}'],  # overlapping: each series once
    ['{__name__=~"fed_(temp|special)"}', "aaa_first"],
    ["fed_upper"],
    ["fed_mixed", "aaa_first"],
    ["fed_own_labels", "fed_unicode"],
    ['{job="edge"}'],  # everything scraped, up and scrape_* included (values compared below)
    ["up", "scrape_samples_scraped"],
    ["nothing_here"],
    ['{gpu=~"1|2"}'],
    ["fed_vanishing"],
    ['{__name__=~"fed_.+",gpu!="0"}', 'fed_special{v=~"n.*"}'],
    [],
]
# series whose values differ between two scrapers by nature
NATURE = re.compile(rb"^(scrape_duration_seconds)\{")


def normalise_values(body):
    return b"\n".join(re.sub(rb" \S+$", b" <v>", line) if NATURE.match(line) else line
                      for line in body.split(b"\n"))


def compare_bodies(f, kelvin, prom):
    for ms in MATCH_SETS:
        now = int(time.time() * 1000)
        a = federate(prom, ms)
        b = federate(kelvin, ms)
        name = " ".join(ms) or "(no match[])"
        f.check(a[0] == b[0] == 200, f"{name}: status Prometheus {a[0]} kelvin {b[0]}")
        f.check(a[1].get("Content-Type") == b[1].get("Content-Type"),
                f"{name}: Content-Type {a[1].get('Content-Type')} vs {b[1].get('Content-Type')}")
        pa = normalise_values(strip_timestamps(f, "Prometheus", a[2], now))
        pb = normalise_values(strip_timestamps(f, "kelvin", b[2], now))
        if not f.check(pa == pb, f"{name}: bodies differ:\n--- Prometheus\n{pa.decode(errors='replace')}"
                                 f"\n--- kelvin\n{pb.decode(errors='replace')}"):
            continue
        if ms == ['{__name__=~"fed_.+"}']:
            f.check(pa.count(b"\n") >= 18 and b'instance=""' not in pa and b"region=\"eu-west\"" in pa,
                    f"the main body is not what the test expects:\n{pa.decode(errors='replace')}")


def compare_answers(f, kelvin, prom):
    for ms in (["up{"], ["rate(x[5m])"], ["{a=~\"(\"}"], ["up", "bad{"], ["1"]):
        a, b = federate(prom, ms), federate(kelvin, ms)
        f.check((a[0], a[2]) == (b[0], b[2]) and a[0] == 400,
                f"match[]={ms}: Prometheus {a[0]} {a[2]!r} kelvin {b[0]} {b[2]!r}")
    for method in ("POST", "PUT", "DELETE", "OPTIONS", "HEAD"):
        a, b = federate(prom, ["up"], method), federate(kelvin, ["up"], method)
        f.check((a[0], a[1].get("Allow"), a[2]) == (b[0], b[1].get("Allow"), b[2]),
                f"{method}: Prometheus {a[0]} {a[1].get('Allow')} {a[2]!r} kelvin {b[0]} {b[1].get('Allow')} {b[2]!r}")
    # gzip: kt.http decompresses; the header says whether it was
    q = urllib.parse.urlencode({"match[]": "fed_temp"})
    for who, url in (("Prometheus", prom), ("kelvin", kelvin)):
        req = urllib.request.Request(url + "/federate?" + q, headers={"Accept-Encoding": "gzip"})
        with urllib.request.urlopen(req, timeout=10) as r:
            raw = r.read()
            enc = r.headers.get("Content-Encoding")
        f.check(enc == "gzip" and b"# TYPE fed_temp untyped" in gzip.decompress(raw), f"{who}: gzip answer {enc}")


def federated_by_b(f, work, kelvin, prom):
    k, p = kelvin.split("//")[1], prom.split("//")[1]
    params = '      "match[]": [\'{__name__=~"fed_.+"}\', "up", "aaa_first"]\n'
    cfg = f"""global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: fed-kelvin
    honor_labels: true
    metrics_path: /federate
    params:
{params}    static_configs: [{{targets: ['{k}']}}]
    metric_relabel_configs: [{{target_label: src, replacement: kelvin}}]
  - job_name: fed-prom
    honor_labels: true
    metrics_path: /federate
    params:
{params}    static_configs: [{{targets: ['{p}']}}]
    metric_relabel_configs: [{{target_label: src, replacement: prom}}]
"""
    pb, b = start_prometheus(work, "prom-b", cfg)
    end = time.time() + 30
    got = {}
    while time.time() < end:
        time.sleep(1)
        got = {}
        for src in ("kelvin", "prom"):
            res = query(b, '{src="%s"}' % src)
            got[src] = sorted((json.dumps({k2: v for k2, v in r["metric"].items() if k2 != "src"}, sort_keys=True),
                               r["value"][1]) for r in res)
        if got["kelvin"] and got["kelvin"] == got["prom"]:
            break
    f.check(len(got.get("prom", [])) >= 18, f"B got {len(got.get('prom', []))} series from Prometheus A")
    if got.get("kelvin") != got.get("prom"):
        ks, ps = set(got.get("kelvin", [])), set(got.get("prom", []))
        f.check(False, f"B's series from kelvin and from A differ: only kelvin {sorted(ks - ps)[:10]}, "
                       f"only A {sorted(ps - ks)[:10]}")
    else:
        print(f"Prometheus B holds the same {len(got['kelvin'])} series from kelvin as from Prometheus A")
    up = query(b, 'up{job=~"fed-.*"}')
    f.check(len(up) == 2 and all(r["value"][1] == "1" for r in up), f"B's scrapes of /federate: {up}")
    with_ext = query(b, '{src="kelvin",region="eu-west",replica="a"}')
    f.check(len(with_ext) >= 17, f"external labels missing on B's series from kelvin: {len(with_ext)}")
    own = query(b, 'fed_own_labels{src="kelvin"}')
    f.check(len(own) == 1 and own[0]["metric"].get("exported_job") == "other"
            and own[0]["metric"].get("exported_instance") == "custom:1"
            and own[0]["metric"].get("region") == "us",
            f"fed_own_labels from kelvin: {own}")
    kt.stop(pb)


def main():
    f = kt.Failures()
    work = tempfile.mkdtemp(prefix="kelvin-federate-")
    fixture = None
    try:
        if not os.access(PROMETHEUS, os.X_OK):
            raise AssertionError(f"{PROMETHEUS} not found (run scripts/peers)")
        vanish_at = time.time() + 1e9  # set once both run
        holder = {"at": vanish_at}
        fixture = FixtureServer([Target("expo", lambda n: exposition(holder["at"])(n))]).start()
        cfg = f"""global:
  scrape_interval: 1s
  scrape_timeout: 1s
{EXTERNAL}scrape_configs:
  - job_name: edge
    metrics_path: /expo
    static_configs: [{{targets: ['{fixture.address}']}}]
"""
        _, kelvin = start_kelvin(work, cfg)
        _, prom = start_prometheus(work, "prom-a", cfg)
        target = fixture["expo"]

        def scrapes_by_both(since):
            n = {"kelvin": 0, "prom": 0}
            for r in list(target.requests):
                ua = str(r["headers"].get("user-agent", ""))
                if r["time"] > since:
                    n["kelvin" if "kelvin/" in ua else "prom"] += 1
            return min(n.values())

        end = time.time() + 40  # both scrape twice with fed_vanishing, then twice without
        while time.time() < end and scrapes_by_both(0) < 2:
            time.sleep(0.25)
        holder["at"] = time.time()
        while time.time() < end and scrapes_by_both(holder["at"] + 0.1) < 2:
            time.sleep(0.25)
        f.check(len(query(prom, "last_over_time(fed_vanishing[1m])")) == 1, "fed_vanishing never scraped")
        compare_bodies(f, kelvin, prom)
        compare_answers(f, kelvin, prom)
        federated_by_b(f, work, kelvin, prom)
    finally:
        if fixture:
            fixture.stop()
        kt.stop_all()
        if not f.items:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print("logs kept in", work)
        f.finish("federate")


if __name__ == "__main__":
    main()
