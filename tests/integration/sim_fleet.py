#!/usr/bin/python3
"""`kelvin sim fleet`: many simulated GPU nodes from one process.

- starts a fleet of 5 nodes on a free loopback port with a file_sd file;
- the file_sd file: one group per node, the fleet's address as target,
  __metrics_path__ /node/<i>/metrics and node="node-<i>"; /nodes serves the
  same document;
- every node scrapes, parses with prometheus_client's text parser, has
  ~1,000 series (8 GPUs: dcgm-exporter's and kelvin_gpu_* families, and
  node_exporter's host families), its own hostname (Hostname label,
  node_uname_info's nodename), its own GPU UUIDs and its own values, and
  marks the GPUs simulated="true";
- gzip (Content-Encoding, same series as plain) and OpenMetrics by Accept
  (content type, # EOF, prometheus_client's OpenMetrics parser, same names);
- 404 for nodes and paths that do not exist; --help and a bad flag;
- values move from one update to the next, and counters never go down.
"""
import gzip
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import kelvintest as kt  # noqa: E402

from prometheus_client.openmetrics import parser as om_parser  # noqa: E402
from prometheus_client import parser as text_parser  # noqa: E402

NODES = 5
PROM_ACCEPT = ("application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,"
               "text/plain;version=0.0.4;q=0.5,*/*;q=0.1")


def raw(url, headers=None):
    """(status, headers, undecoded body)."""
    import urllib.error
    import urllib.request
    req = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.headers, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()


def series(body_text):
    """{(name, frozenset(labels)): value}. The body must pass prometheus_client's
    text parser too (which renames counters lacking _total, so the names
    are taken from the exposition itself)."""
    n = sum(len(fam.samples) for fam in text_parser.text_string_to_metric_families(body_text))
    samples, _, _ = kt.parse_text(body_text)
    out = {(name, frozenset(labels.items())): v for name, labels, v in samples}
    if n != len(samples) or len(out) != len(samples):
        raise AssertionError(f"{len(samples)} samples, {n} by prometheus_client, {len(out)} distinct")
    return out


def by_name(ser, name):
    return {k: v for k, v in ser.items() if k[0] == name}


f = kt.Failures()
tmp = tempfile.mkdtemp(prefix="kelvin-fleet-")
try:
    # --help and flag errors
    r = subprocess.run([kt.KELVIN, "sim", "fleet", "--help"], capture_output=True, text=True, timeout=20)
    f.check(r.returncode == 0 and "--nodes" in r.stdout and "--sd-file" in r.stdout,
            f"--help: exit {r.returncode}, output {r.stdout[:200]!r}")
    r = subprocess.run([kt.KELVIN, "sim", "fleet", "--no-such-flag"], capture_output=True, text=True, timeout=20)
    f.check(r.returncode == 2, f"a bad flag must exit 2, got {r.returncode}")
    r = subprocess.run([kt.KELVIN, "sim", "fleet", "--nodes", "0"], capture_output=True, text=True, timeout=20)
    f.check(r.returncode == 2, f"--nodes 0 must exit 2, got {r.returncode}")

    port = kt.free_port()
    sd = os.path.join(tmp, "fleet.json")
    p = kt.start([kt.KELVIN, "sim", "fleet", "--nodes", str(NODES), "--listen", f"127.0.0.1:{port}",
                  "--sd-file", sd, "--update-interval", "1s", "--seed", "7"],
                 log=os.path.join(tmp, "fleet.log"))
    base = f"http://127.0.0.1:{port}"
    kt.wait_http(base + "/-/healthy", proc=p)

    # the file_sd file
    with open(sd) as fh:
        groups = json.load(fh)
    f.check(isinstance(groups, list) and len(groups) == NODES, f"sd file: {NODES} groups expected, got {groups!r:.200}")
    for i, g in enumerate(groups):
        f.check(g.get("targets") == [f"127.0.0.1:{port}"], f"sd group {i}: targets {g.get('targets')}")
        f.check(g.get("labels") == {"__metrics_path__": f"/node/{i}/metrics", "node": f"node-{i}"},
                f"sd group {i}: labels {g.get('labels')}")
    st, hdr, body = raw(base + "/nodes")
    f.check(st == 200 and json.loads(body) == groups, f"/nodes: status {st}, differs from the sd file")
    f.check(not os.path.exists(sd + ".tmp"), "the sd file's temporary file was left behind")

    # every node
    per_node = []
    uuids = []
    for g in groups:
        path = g["labels"]["__metrics_path__"]
        node = g["labels"]["node"]
        st, hdr, body = raw(base + path)
        f.check(st == 200, f"{path}: status {st}")
        f.check(hdr.get("Content-Type", "").startswith("text/plain; version=0.0.4"),
                f"{path}: content type {hdr.get('Content-Type')}")
        try:
            ser = series(body.decode())
        except Exception as e:  # noqa: BLE001 - the real parser rejected the body
            f.check(False, f"{path}: prometheus_client rejected the text body: {e}")
            continue
        per_node.append(ser)
        n = len(ser)
        f.check(900 <= n <= 1200, f"{path}: {n} series, expected ~1,000")
        names = {k[0] for k in ser}
        for need in ("DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_FB_USED",
                     "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "kelvin_gpu_info", "kelvin_gpu_nvml_up",
                     "node_cpu_seconds_total", "node_memory_MemTotal_bytes", "node_load1",
                     "node_network_receive_bytes_total", "node_filesystem_avail_bytes", "node_uname_info"):
            f.check(need in names, f"{path}: {need} missing")
        temps = by_name(ser, "DCGM_FI_DEV_GPU_TEMP")
        f.check(len(temps) == 8, f"{path}: {len(temps)} GPUs, expected 8")
        hosts = {dict(k[1]).get("Hostname") for k in temps}
        f.check(hosts == {node}, f"{path}: Hostname labels {hosts}, expected {node}")
        f.check(all(dict(k[1]).get("simulated") == "true" for k in temps), f"{path}: GPU series not simulated=\"true\"")
        up = by_name(ser, "kelvin_gpu_nvml_up")
        f.check(list(up.values()) == [1.0] and dict(next(iter(up))[1]) == {"simulated": "true"},
                f"{path}: kelvin_gpu_nvml_up {up}")
        uname = by_name(ser, "node_uname_info")
        f.check([dict(k[1]).get("nodename") for k in uname] == [node], f"{path}: uname {uname}")
        uuids.append({dict(k[1])["UUID"] for k in temps})
        # plausible values
        for k, v in temps.items():
            f.check(15 <= v <= 95, f"{path}: GPU temperature {v}")
        mem = sum(by_name(ser, "node_memory_MemTotal_bytes").values())
        f.check(mem > 1e11, f"{path}: MemTotal {mem}")

    if len(per_node) == NODES:
        for i in range(NODES):
            for j in range(i + 1, NODES):
                f.check(not (uuids[i] & uuids[j]), f"nodes {i} and {j} share GPU UUIDs")
        powers = [tuple(sorted(by_name(s, "DCGM_FI_DEV_POWER_USAGE").values())) for s in per_node]
        f.check(len(set(powers)) == NODES, "nodes must have their own values (power draw identical)")
        cpus = [sum(by_name(s, "node_cpu_seconds_total").values()) for s in per_node]
        f.check(len(set(cpus)) == NODES, "nodes must have their own host values (CPU seconds identical)")

    # 404s
    for bad in ("/node/5/metrics", "/node/x/metrics", "/node/01/metrics", "/node/1/metric", "/node//metrics",
                "/node/99999999999999999999/metrics", "/metrics"):
        st, _, _ = raw(base + bad)
        f.check(st == 404, f"{bad}: status {st}, expected 404")

    # gzip
    st, hdr, gz = raw(base + "/node/2/metrics", {"Accept-Encoding": "gzip"})
    f.check(st == 200 and hdr.get("Content-Encoding") == "gzip", f"gzip: status {st}, encoding {hdr.get('Content-Encoding')}")
    try:
        plain = gzip.decompress(gz).decode()
        st, _, body = raw(base + "/node/2/metrics")
        f.check(set(series(plain)) == set(series(body.decode())), "gzip and plain bodies carry different series")
    except OSError as e:
        f.check(False, f"gzip body does not decompress: {e}")

    # OpenMetrics
    st, hdr, om = raw(base + "/node/1/metrics", {"Accept": PROM_ACCEPT, "Accept-Encoding": "gzip"})
    f.check(hdr.get("Content-Type", "").startswith("application/openmetrics-text; version=1.0.0"),
            f"OpenMetrics content type {hdr.get('Content-Type')}")
    if hdr.get("Content-Encoding") == "gzip":
        om = gzip.decompress(om)
    else:
        f.check(False, "OpenMetrics with Accept-Encoding gzip came back uncompressed")
    f.check(om.endswith(b"# EOF\n"), "OpenMetrics must end with # EOF")
    try:
        om_names = {s.name for fam in om_parser.text_string_to_metric_families(om.decode()) for s in fam.samples}
        text_names = {k[0] for k in per_node[1]} if len(per_node) > 1 else set()
        f.check(text_names and text_names == om_names,
                f"OpenMetrics names differ from text: {sorted(text_names ^ om_names)[:10]}")
    except Exception as e:  # noqa: BLE001
        f.check(False, f"prometheus_client rejected the OpenMetrics body: {e}")

    # values move between updates; counters never decrease
    _, _, b1 = raw(base + "/node/0/metrics")
    time.sleep(2.2)
    _, _, b2 = raw(base + "/node/0/metrics")
    s1, s2 = series(b1.decode()), series(b2.decode())
    changed = sum(1 for k in s1 if k in s2 and s1[k] != s2[k])
    f.check(changed > 100, f"only {changed} series changed across two updates")
    e1 = sum(by_name(s1, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION").values())
    e2 = sum(by_name(s2, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION").values())
    f.check(e2 > e1, f"energy counters did not grow: {e1} -> {e2}")
    went_down = [k[0] for k in s1 if k in s2 and k[0].endswith("_total") and s2[k] < s1[k]]
    f.check(not went_down, f"counters went down: {went_down[:5]}")

    f.check(kt.stop(p) == 0, "the fleet did not exit cleanly on SIGTERM")
finally:
    import shutil
    shutil.rmtree(tmp, ignore_errors=True)
    f.finish("sim_fleet")
