#!/usr/bin/python3
"""tests/compat/node_exporter.py -- kelvin agent's host metrics against node_exporter 1.5.

Starts the real node_exporter (Debian's prometheus-node-exporter 1.5.0 from
$KELVIN_PEERS/bin, fetched by scripts/peers) with the collectors Kelvin
implements, and `$KELVIN_BIN agent` with a simulated GPU, both on loopback
ports picked at run time, scrapes both /metrics and compares every node_*
family: name, TYPE, HELP, the label names of every series, the set of series
(label values), and the values.

Two rounds:
  live     both read this machine's /proc, /sys and mounts. Kelvin is scraped
           between two node_exporter scrapes taken more than one collection
           interval apart, so a counter must lie between node_exporter's two
           readings (with a small tolerance); static values must be equal;
           values that move both ways (free memory, sockets, load...) get a
           tolerance. The mount and device tables can change under a busy
           host, so a round that differs is retried twice before failing.
  fixture  both read tests/fixtures/host (InfiniBand HCAs, hwmon chips,
           thermal throttles, udev disk properties, odd mount points: what
           this machine may not have). Everything must be equal except the
           clock and free space of the real filesystem under the fixture.

Differences that are legitimate, and why:
  - node_network_receive_nohandler_total is missing from node_exporter in the
    fixture round: there it must read /proc/net/dev (its default netlink
    source cannot be pointed at a tree), which has no such column. Kelvin
    reads statistics/rx_nohandler, the counter netlink reports; the live
    round compares it.
  - node_cpu_seconds_total / node_cpu_guest_seconds_total series that only
    node_exporter has, all zero: offline CPUs. node_exporter 1.5's procfs
    fills gaps in /proc/stat's CPU numbering with zeros; Kelvin leaves out
    CPUs the kernel does not list (as later node_exporter releases do).
  - families of a node_exporter collector that failed this scrape
    (node_scrape_collector_success 0) may be Kelvin's alone: node_exporter
    drops a whole collector when one file cannot be read; Kelvin keeps what
    it could read.
  - node_scrape_collector_* and node_exporter_build_info are node_exporter's
    own; Kelvin reports its collectors in kelvin_agent_collector_*.

Also prints what a collection costs: node_exporter's CPU per scrape (its
utime+stime over 20 scrapes) and Kelvin's host collector CPU per cycle
(kelvin_agent_collector_cpu_seconds_total / _cycles_total) for information;
cost goals are checked by `make bench`, not here (tests check correctness,
and this one also runs under the sanitizers).

Exits 0 when everything agrees; otherwise prints every difference and exits 1.
"""
import math
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

COLLECTORS = ["cpu", "meminfo", "loadavg", "pressure", "stat", "netdev", "netclass", "diskstats",
              "filesystem", "infiniband", "hwmon", "uname", "time", "vmstat", "entropy", "filefd",
              "sockstat", "netstat"]

SRC = os.environ.get("KELVIN_SOURCE_DIR") or os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.environ.get("KELVIN_BIN") or os.path.join(SRC, "build", "kelvin")
PEERS = os.environ.get("KELVIN_PEERS") or os.path.join(SRC, "build", "peers")
NE = os.path.join(PEERS, "bin", "prometheus-node-exporter")
FIXTURE = os.path.join(SRC, "tests", "fixtures", "host")

HOST_INTERVAL_S = 1.0  # kelvin agent's default collection interval

procs = []


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def free_port(kind=socket.SOCK_STREAM):
    s = socket.socket(socket.AF_INET, kind)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def start(cmd, logpath):
    log = open(logpath, "wb")
    p = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    procs.append((p, logpath))
    return p


def stop_all():
    for p, _ in procs:
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
    deadline = time.time() + 10
    for p, _ in procs:
        while p.poll() is None and time.time() < deadline:
            time.sleep(0.05)
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait(timeout=5)
    procs.clear()


def log_tail(logpath, n=30):
    try:
        with open(logpath, "rb") as f:
            return b"\n".join(f.read().splitlines()[-n:]).decode("utf-8", "replace")
    except OSError:
        return "(no log)"


def scrape(url):
    req = urllib.request.Request(url, headers={"Accept": "text/plain;version=0.0.4"})
    with urllib.request.urlopen(req, timeout=10) as r:
        return r.read().decode("utf-8")


def wait_up(url, proc, logpath, marker, timeout=60):
    deadline = time.time() + timeout
    last = ""
    while time.time() < deadline:
        if proc.poll() is not None:
            fail("%s exited with %s before serving:\n%s" % (url, proc.returncode, log_tail(logpath)))
        try:
            body = scrape(url)
            if marker in body:
                return body
            last = "no %r yet" % marker
        except OSError as e:
            last = str(e)
        time.sleep(0.2)
    fail("%s not ready after %ds (%s):\n%s" % (url, timeout, last, log_tail(logpath)))


# ---- the text format (0.0.4), standard library only ----

def unescape(s, quote):
    out, i = [], 0
    while i < len(s):
        c = s[i]
        if c == "\\" and i + 1 < len(s):
            n = s[i + 1]
            if n == "n":
                out.append("\n")
            elif n == "\\":
                out.append("\\")
            elif n == '"' and quote:
                out.append('"')
            else:
                out.append("\\" + n)
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


LABEL_RE = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*,?')


def parse(text):
    """name -> {"type", "help", "series": {((label, value), ...) sorted: float}, "labelnames": set}"""
    fams = {}

    def fam(name):
        return fams.setdefault(name, {"type": None, "help": None, "series": {}, "labelnames": set()})

    for ln, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        if line.startswith("#"):
            m = re.match(r"# (HELP|TYPE) ([a-zA-Z_:][a-zA-Z0-9_:]*)(?: (.*))?$", line)
            if not m:
                continue
            f = fam(m.group(2))
            if m.group(1) == "HELP":
                if f["help"] is not None:
                    raise ValueError("line %d: second HELP for %s" % (ln, m.group(2)))
                f["help"] = unescape(m.group(3) or "", False)
            else:
                if f["type"] is not None:
                    raise ValueError("line %d: second TYPE for %s" % (ln, m.group(2)))
                f["type"] = m.group(3)
            continue
        m = re.match(r"([a-zA-Z_:][a-zA-Z0-9_:]*)", line)
        if not m:
            raise ValueError("line %d: no metric name: %r" % (ln, line))
        name, rest = m.group(1), line[m.end():]
        labels = []
        if rest.startswith("{"):
            end = rest.find("}")
            body = rest[1:end]
            pos = 0
            while pos < len(body):
                lm = LABEL_RE.match(body, pos)
                if not lm:
                    raise ValueError("line %d: bad labels %r" % (ln, body))
                labels.append((lm.group(1), unescape(lm.group(2), True)))
                pos = lm.end()
            rest = rest[end + 1:]
        parts = rest.split()
        if not parts:
            raise ValueError("line %d: no value" % ln)
        value = float(parts[0].replace("Inf", "inf"))
        base = name
        for suf in ("_bucket", "_sum", "_count"):
            if name not in fams and name.endswith(suf) and name[: -len(suf)] in fams:
                base = name[: -len(suf)]
        f = fam(base)
        key = tuple(sorted(labels + ([("__name__", name)] if name != base else [])))
        if len(set(k for k, _ in labels)) != len(labels):
            raise ValueError("line %d: repeated label name" % ln)
        if key in f["series"]:
            raise ValueError("line %d: duplicate series %s%s" % (ln, name, key))
        f["series"][key] = value
        f["labelnames"].add(tuple(sorted(k for k, _ in labels)))
    return fams


# ---- which collector a family belongs to ----

def collector_of(name):
    rules = [
        (r"node_cpu_", "cpu"), (r"node_memory_", "meminfo"), (r"node_load", "loadavg"),
        (r"node_pressure_", "pressure"),
        (r"node_(boot_time_seconds|context_switches_total|forks_total|intr_total|procs_)", "stat"),
        (r"node_network_(receive|transmit)_[a-z]+_total$", "netdev"), (r"node_network_", "netclass"),
        (r"node_disk_", "diskstats"), (r"node_filesystem_", "filesystem"), (r"node_infiniband_", "infiniband"),
        (r"node_hwmon_", "hwmon"), (r"node_uname_", "uname"), (r"node_time_", "time"), (r"node_vmstat_", "vmstat"),
        (r"node_entropy_", "entropy"), (r"node_filefd_", "filefd"), (r"node_sockstat_", "sockstat"),
        (r"node_netstat_", "netstat"),
    ]
    for pat, c in rules:
        if re.match(pat, name):
            return c
    return None


def ne_failed_collectors(ne):
    f = ne.get("node_scrape_collector_success", {"series": {}})
    return {dict(k).get("collector") for k, v in f["series"].items() if v == 0}


def considered(name):
    return name.startswith("node_") and not name.startswith("node_scrape_") and name != "node_exporter_build_info"


# ---- value tolerances (live round) ----

# (pattern, absolute, relative): a value may sit that far outside node_exporter's two readings
LIVE_TOLERANCE = [
    (r"node_time_seconds$", 10, 0),
    (r"node_boot_time_seconds$", 1, 0),  # btime can move by a second as the clock is adjusted
    (r"node_memory_(MemTotal|SwapTotal|Hugepagesize|VmallocTotal|HugePages_Total|DirectMap)", 0, 0),
    (r"node_memory_", 64 << 20, 0.05),
    (r"node_load", 2, 0),
    (r"node_procs_(running|blocked)", 1e9, 0),  # instantaneous; any count
    (r"node_entropy_available_bits", 1e9, 0),
    (r"node_filefd_allocated", 500, 0),
    (r"node_sockstat_", 200, 0.2),
    (r"node_netstat_Tcp_CurrEstab", 100, 0),
    (r"node_filesystem_(avail|free)_bytes", 256 << 20, 0.01),
    (r"node_filesystem_files_free", 10000, 0.01),
    (r"node_disk_io_now", 1000, 0),
    (r"node_cpu_(seconds|guest_seconds)_total", 0.05, 0),
    (r"node_pressure_", 0.01, 0),
    (r"node_hwmon_", 0, 0.05),  # sensors move
    (r"", 0, 1e-9),
]


def tolerance(name, hi):
    for pat, ab, rel in LIVE_TOLERANCE:
        if re.match(pat, name):
            return max(ab, rel * abs(hi))
    return 0


def same(a, b):
    return a == b or (math.isnan(a) and math.isnan(b))


def compare(ne1, kv, ne2, mode):
    problems = []
    failed = ne_failed_collectors(ne1) | ne_failed_collectors(ne2)
    names = sorted(n for n in set(ne1) | set(kv) if considered(n))
    for name in names:
        a, k = ne1.get(name), kv.get(name)
        if k is None:
            problems.append("%s: node_exporter has it, kelvin does not" % name)
            continue
        if a is None:
            if mode == "fixture" and name == "node_network_receive_nohandler_total":
                continue  # node_exporter reads /proc/net/dev here (see the top of the file)
            if collector_of(name) in failed:
                continue  # node_exporter dropped that collector this scrape
            problems.append("%s: kelvin has it, node_exporter does not" % name)
            continue
        if a["type"] != k["type"]:
            problems.append("%s: TYPE %s, node_exporter %s" % (name, k["type"], a["type"]))
        if a["help"] != k["help"]:
            problems.append("%s: HELP %r, node_exporter %r" % (name, k["help"], a["help"]))
        if a["labelnames"] != k["labelnames"]:
            problems.append("%s: label names %s, node_exporter %s" % (name, sorted(k["labelnames"]), sorted(a["labelnames"])))
        b = ne2.get(name, a)
        for key in sorted(set(a["series"]) | set(k["series"])):
            if key not in k["series"]:
                if name.startswith("node_cpu_") and a["series"][key] == 0 and b["series"].get(key, 0) == 0:
                    continue  # an offline CPU that node_exporter 1.5 fills with zeros
                problems.append("%s%s: node_exporter has this series, kelvin does not" % (name, dict(key)))
                continue
            if key not in a["series"]:
                if collector_of(name) in failed:
                    continue
                problems.append("%s%s: kelvin has this series, node_exporter does not" % (name, dict(key)))
                continue
            v = k["series"][key]
            x, y = a["series"][key], b["series"].get(key, a["series"][key])
            if mode == "fixture":
                if name == "node_time_seconds":
                    ok = abs(v - x) < 60
                elif re.match(r"node_filesystem_(avail_bytes|free_bytes|files_free)$", name):
                    ok = abs(v - x) <= max(256 << 20, 0.01 * abs(x))  # the real disk under the tree
                else:
                    ok = same(v, x)
                if not ok:
                    problems.append("%s%s = %r, node_exporter %r" % (name, dict(key), v, x))
                continue
            lo, hi = min(x, y), max(x, y)
            tol = tolerance(name, hi)
            if not (same(v, x) or same(v, y) or lo - tol <= v <= hi + tol):
                problems.append("%s%s = %r, node_exporter %r then %r (tolerance %g)" % (name, dict(key), v, x, y, tol))
    return problems


def proc_cpu_s(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def kelvin_host_cpu(kv):
    cpu = kv.get("kelvin_agent_collector_cpu_seconds_total", {"series": {}})["series"]
    cyc = kv.get("kelvin_agent_collector_cycles_total", {"series": {}})["series"]
    c = [v for k, v in cpu.items() if dict(k).get("collector") == "host"]
    n = [v for k, v in cyc.items() if dict(k).get("collector") == "host"]
    if not c or not n or n[0] == 0:
        return None
    return c[0] / n[0]


def host_cycles(text):
    """kelvin's count of host collection cycles in a scrape, or None."""
    m = re.search(r'^kelvin_agent_collector_cycles_total\{[^}]*collector="host"[^}]*\} (\S+)$', text, re.M)
    return float(m.group(1)) if m else None


def run_round(mode, tmp):
    ne_port, kv_port, statsd_port = free_port(), free_port(), free_port(socket.SOCK_DGRAM)
    ne_cmd = [NE, "--collector.disable-defaults", "--web.listen-address=127.0.0.1:%d" % ne_port]
    ne_cmd += ["--collector." + c for c in COLLECTORS]
    kv_cmd = [BIN, "agent", "--web.listen-address=127.0.0.1:%d" % kv_port, "--gpu.simulate=healthy",
              "--gpu.simulate.count=1", "--statsd.listen-udp=127.0.0.1:%d" % statsd_port]
    if mode == "fixture":
        ne_cmd += ["--path.procfs=%s/proc" % FIXTURE, "--path.sysfs=%s/sys" % FIXTURE,
                   "--path.rootfs=%s/root" % FIXTURE, "--path.udev.data=%s/root/run/udev/data" % FIXTURE,
                   "--no-collector.netdev.netlink"]
        kv_cmd += ["--path.procfs=%s/proc" % FIXTURE, "--path.sysfs=%s/sys" % FIXTURE,
                   "--path.rootfs=%s/root" % FIXTURE]
    ne_log, kv_log = os.path.join(tmp, "ne-%s.log" % mode), os.path.join(tmp, "kelvin-%s.log" % mode)
    ne = start(ne_cmd, ne_log)
    kv = start(kv_cmd, kv_log)
    ne_url, kv_url = "http://127.0.0.1:%d/metrics" % ne_port, "http://127.0.0.1:%d/metrics" % kv_port
    try:
        wait_up(ne_url, ne, ne_log, "node_cpu_seconds_total")
        wait_up(kv_url, kv, kv_log, "node_cpu_seconds_total")
        problems = None
        for attempt in range(3):
            c0 = host_cycles(scrape(kv_url))
            t1 = scrape(ne_url)
            # kelvin serves its last snapshot: wait until two more host cycles
            # have run, so the snapshot served was taken after t1 even when the
            # machine is slow (a fixed sleep was not enough under sanitizers
            # on a loaded 2-core machine); bounded in time
            time.sleep(HOST_INTERVAL_S * 2.5)
            deadline = time.time() + 30
            tk = scrape(kv_url)
            while c0 is not None and (host_cycles(tk) or 0) < c0 + 2 and time.time() < deadline:
                time.sleep(HOST_INTERVAL_S / 4)
                tk = scrape(kv_url)
            t2 = scrape(ne_url)
            try:
                ne1, kvf, ne2 = parse(t1), parse(tk), parse(t2)
            except ValueError as e:
                fail("%s round: cannot parse a scrape: %s" % (mode, e))
            problems = compare(ne1, kvf, ne2, mode)
            if not problems:
                break
            print("%s round, attempt %d: %d differences, retrying" % (mode, attempt + 1, len(problems)))
        n_fams = len([n for n in kvf if considered(n)])
        n_series = sum(len(kvf[n]["series"]) for n in kvf if considered(n))
        print("%s round: %d node_* families, %d series compared" % (mode, n_fams, n_series))
        cost = None
        if mode == "live":
            scrape(ne_url)
            c0 = proc_cpu_s(ne.pid)
            for _ in range(20):
                scrape(ne_url)
            ne_ms = (proc_cpu_s(ne.pid) - c0) / 20 * 1000
            kv_cycle = kelvin_host_cpu(parse(scrape(kv_url)))
            cost = (ne_ms, None if kv_cycle is None else kv_cycle * 1000)
        return problems, n_fams, cost
    finally:
        stop_all()


def main():
    if not os.access(NE, os.X_OK):
        fail("%s not found: run scripts/peers (Debian's prometheus-node-exporter)" % NE)
    if not os.access(BIN, os.X_OK):
        fail("%s not found: build kelvin first" % BIN)
    if not os.path.isdir(FIXTURE):
        fail("fixture tree %s missing" % FIXTURE)
    all_problems = []
    with tempfile.TemporaryDirectory(prefix="kelvin-compat-ne-") as tmp:
        for mode in ("live", "fixture"):
            problems, n_fams, cost = run_round(mode, tmp)
            if n_fams < 50:
                all_problems.append("%s round: only %d node_* families served" % (mode, n_fams))
            all_problems += ["[%s] %s" % (mode, p) for p in problems]
            if cost:
                ne_ms, kv_ms = cost
                print("cost: node_exporter %.2f ms CPU per scrape (these collectors); kelvin host collector %s per cycle"
                      % (ne_ms, "%.3f ms CPU" % kv_ms if kv_ms is not None else "unknown"))
                if kv_ms is None:
                    all_problems.append("kelvin_agent_collector_cpu_seconds_total{collector=\"host\"} missing")
    if all_problems:
        for p in all_problems:
            print(p, file=sys.stderr)
        fail("%d differences from node_exporter" % len(all_problems))
    print("OK: kelvin agent's node_* metrics match node_exporter 1.5")


if __name__ == "__main__":
    def on_signal(sig, frame):
        stop_all()
        sys.exit(1)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        main()
    finally:
        stop_all()
