"""tests/lib/rw_stack.py -- the processes of the remote-write tests: the sender
(`kelvin server` or, with --sender=prometheus, the real Prometheus 2.42 given
the same configuration), VictoriaMetrics and a Prometheus 2.42 receiver, plus
the comparison of what a sender stored with what a receiver holds.

Every process listens on 127.0.0.1 on a port picked free at run time and kept
across restarts of the same instance (a receiver comes back where the
sender's url points). Processes go through kelvintest.start, so
kelvintest.stop_all() (called by Failures.finish) stops them on any exit.

Sender flags shared by kelvin and Prometheus: --config.file,
--storage.tsdb.path, --web.listen-address, --storage.remote.flush-deadline.
Flags only one of them has are given per kind (wal_flags()): kelvin takes
--storage.tsdb.wal-segment-size and --storage.tsdb.wal-checkpoint-size (small
segments, frequent checkpoints); Prometheus refuses segments under 10 MB and
checkpoints only when it compacts its head, so it gets the 10 MB floor and a
short --storage.tsdb.min-block-duration (its hidden flag) instead.

Comparison (compare()): expected and actual are {labels tuple: [(ts ms,
value)]}; every (series, timestamp) must appear exactly once with an equal
value (equal() decides: bit-exact, or VictoriaMetrics' decimal rounding).
"""
import math
import os
import shutil
import signal
import sys
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import kelvintest as kt  # noqa: E402
import remote_write as rw  # noqa: E402

PROMETHEUS = os.path.join(kt.PEERS, "bin", "prometheus")
VICTORIA = os.path.join(kt.PEERS, "bin", "victoria-metrics")


def sender_kind(argv):
    """'kelvin' or 'prometheus' from --sender=KIND (default kelvin)."""
    for a in argv:
        if a.startswith("--sender="):
            k = a.split("=", 1)[1]
            if k not in ("kelvin", "prometheus"):
                raise SystemExit(f"--sender: kelvin or prometheus, not {k!r}")
            return k
    return "kelvin"


def arg_value(argv, name, default):
    for a in argv:
        if a.startswith(f"--{name}="):
            return type(default)(a.split("=", 1)[1])
    return default


def kelvin_has_sender():
    """Whether this kelvin's server has the remote-write sender (its flags)."""
    rc, out, err = kt.run_capture([kt.KELVIN, "server", "--help"], timeout=20)
    return rc == 0 and "storage.remote.flush-deadline" in out + err


def tail(path, n=40):
    try:
        with open(path, errors="replace") as fh:
            return "".join(fh.readlines()[-n:])
    except OSError:
        return "(no log)"


class Proc:
    """A restartable process on a fixed loopback port."""
    ready_path = "/-/ready"

    def __init__(self, work, name):
        self.work, self.name = work, name
        self.port = kt.free_port()
        self.proc = None
        self.starts = 0

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"

    @property
    def log(self):
        return os.path.join(self.work, f"{self.name}.{self.starts}.log")

    def cmd(self):
        raise NotImplementedError

    def start(self, deadline=60):
        self.starts += 1
        self.proc = kt.start(self.cmd(), log=self.log)
        try:
            kt.wait_http(self.url + self.ready_path, deadline=deadline, proc=self.proc)
        except AssertionError as e:
            raise AssertionError(f"{self.name}: {e}; log:\n{tail(self.log)}") from None
        return self

    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout=30):
        if self.proc is None:
            return None
        rc = kt.stop(self.proc, timeout=timeout)
        self.proc = None
        return rc

    def kill9(self):
        p = self.proc
        p.send_signal(signal.SIGKILL)
        p.wait(10)
        if p in kt._procs:
            kt._procs.remove(p)
        self.proc = None

    def metrics(self, prefix=""):
        if not self.running():
            raise AssertionError(f"{self.name} is not running; log:\n{tail(self.log)}")
        return rw.metrics(self.url, prefix)


class Sender(Proc):
    def __init__(self, kind, work, cfg_path, extra=(), name="sender"):
        super().__init__(work, name)
        self.kind = kind
        self.cfg_path = cfg_path
        self.data = os.path.join(work, name + "-data")
        self.extra = list(extra)

    def cmd(self):
        base = [PROMETHEUS] if self.kind == "prometheus" else [kt.KELVIN, "server"]
        return base + [f"--config.file={self.cfg_path}", f"--storage.tsdb.path={self.data}",
                       f"--web.listen-address=127.0.0.1:{self.port}", "--storage.remote.flush-deadline=10s"] + \
            self.extra

    def wal_files(self):
        """(segment numbers, checkpoint numbers) in the data dir's wal/ now."""
        segs, ckpts = [], []
        try:
            names = os.listdir(os.path.join(self.data, "wal"))
        except OSError:
            return segs, ckpts
        for n in names:
            if n.isdigit():
                segs.append(int(n))
            elif n.startswith("checkpoint.") and n[11:].isdigit():
                ckpts.append(int(n[11:]))
        return sorted(segs), sorted(ckpts)

    def stored(self, t0_ms, t1_ms, match='{__name__=~".+"}'):
        """Every sample the sender stored with t0 < ts <= t1, through its query API."""
        got = rw.prom_range(self.url, t1_ms / 1000.0, (t1_ms - t0_ms) / 1000.0 + 1, match)
        return {k: [(t, v) for t, v in s if t0_ms < t <= t1_ms] for k, s in got.items()}


def wal_flags(kind, segment_bytes, checkpoint_bytes, prom_block="2m"):
    """Flags that make the sender roll WAL segments and checkpoint often."""
    if kind == "kelvin":
        return [f"--storage.tsdb.wal-segment-size={segment_bytes}",
                f"--storage.tsdb.wal-checkpoint-size={checkpoint_bytes}"]
    return ["--storage.tsdb.wal-segment-size=10MB", f"--storage.tsdb.min-block-duration={prom_block}",
            f"--storage.tsdb.max-block-duration={prom_block}"]


class VictoriaMetrics(Proc):
    ready_path = "/health"

    def __init__(self, work, name="vm"):
        super().__init__(work, name)
        self.data = os.path.join(work, name + "-data")

    def cmd(self):
        # no dedup (-dedup.minScrapeInterval unset: 0), no latency offset so
        # fresh samples are visible, no self-scraping.
        return [VICTORIA, f"-httpListenAddr=127.0.0.1:{self.port}", f"-storageDataPath={self.data}",
                "-search.latencyOffset=0", "-retentionPeriod=100y", "-loggerLevel=ERROR"]

    @property
    def write_url(self):
        return self.url + "/api/v1/write"

    def export(self, t0_ms, t1_ms):
        """Raw samples with t0 < ts <= t1 ({labels: [(ts, value)]}, duplicates kept)."""
        with urllib.request.urlopen(self.url + "/internal/force_flush", timeout=30) as r:
            r.read()
        got = rw.vm_export(self.url, t0_ms / 1000.0 - 1, t1_ms / 1000.0 + 1)
        out = {}
        for k, s in got.items():
            s = sorted((t, v) for t, v in s if t0_ms < t <= t1_ms)
            if s:
                out[k] = s
        return out

    def rows(self):
        """Rows VM says it inserted through remote write (None when unknown)."""
        ms = self.metrics("vm_rows_inserted_total")
        return rw.metric_sum(ms, "vm_rows_inserted_total", type="promremotewrite")


class PromReceiver(Proc):
    def __init__(self, work, name="prom-recv"):
        super().__init__(work, name)
        self.data = os.path.join(work, name + "-data")
        self.cfg = os.path.join(work, name + ".yml")
        with open(self.cfg, "w") as fh:
            fh.write("global:\n  scrape_interval: 1m\nscrape_configs: []\n")

    def cmd(self):
        return [PROMETHEUS, f"--config.file={self.cfg}", f"--storage.tsdb.path={self.data}",
                f"--web.listen-address=127.0.0.1:{self.port}", "--web.enable-remote-write-receiver",
                "--log.level=warn"]

    @property
    def write_url(self):
        return self.url + "/api/v1/write"

    def stored(self, t0_ms, t1_ms):
        got = rw.prom_range(self.url, t1_ms / 1000.0, (t1_ms - t0_ms) / 1000.0 + 1)
        out = {}
        for k, s in got.items():
            s = [(t, v) for t, v in s if t0_ms < t <= t1_ms]
            if s:
                out[k] = s
        return out


# ---- expectations and comparison -------------------------------------------------

def add_external(labels, external):
    """Prometheus's processExternalLabels: a series' own label wins."""
    d = dict(labels)
    for k, v in external.items():
        d.setdefault(k, v)
    return tuple(sorted(d.items()))


def equal_exact(a, b):
    """Bit-exact, except that any two ordinary NaNs are equal (a query API's
    "NaN" does not carry the payload a scrape stored) and -0 equals +0
    (2.42 sends -0 as 0: gogo protobuf leaves out a double that compares
    equal to 0, and the receiver reads the default, +0)."""
    if math.isnan(a) and math.isnan(b):
        return rw.is_stale(a) == rw.is_stale(b)
    if a == 0.0 and b == 0.0:
        return True
    return rw.same_float(a, b)


def equal_vm(a, b):
    """VictoriaMetrics stores a value as a decimal of at most ~12 significant
    digits (lib/decimal): -0 comes back 0, subnormals 0, other values within
    1e-11 relative. Infinities exactly."""
    if a == b:
        return True
    if math.isinf(a) or math.isinf(b) or math.isnan(a) or math.isnan(b):
        return False
    if max(abs(a), abs(b)) < 1e-300:
        return True
    return abs(a - b) <= 1e-11 * max(abs(a), abs(b))


def equal_stale_aware(eq):
    """eq, and a stale marker equals VM's null (NaN) or another stale marker."""
    def f(a, b):
        if rw.is_stale(a) or rw.is_stale(b):
            return math.isnan(a) and math.isnan(b)
        return eq(a, b)
    return f


def fmt_key(k, limit=160):
    """A labels tuple as name{a="b",...}, cut at limit characters."""
    d = dict(k)
    name = d.pop("__name__", "")
    s = name + "{" + ",".join(f'{a}="{b}"' for a, b in sorted(d.items())) + "}"
    return s if len(s) <= limit else s[:limit] + "...}"


def compare(expected, actual, eq, what, fail, examples=3):
    """Every (series, ts) of expected appears exactly once in actual with an
    equal value; nothing else is in actual. Reports up to `examples` of each
    kind of problem, and the time span of the missing, duplicated and extra
    samples, through fail. Returns a dict of counts."""
    c = {"series": len(expected), "samples": sum(len(s) for s in expected.values()),
         "missing_series": 0, "extra_series": 0, "missing": 0, "extra": 0, "dup": 0, "value": 0}
    ex = {k: [] for k in ("missing_series", "extra_series", "missing", "extra", "dup", "value")}
    span = {k: [None, None] for k in ("missing", "extra", "dup")}

    def note(kind, msg, ts=None):
        c[kind] += 1
        if msg and len(ex[kind]) < examples:
            ex[kind].append(msg)
        if ts is not None and kind in span:
            lo, hi = span[kind]
            span[kind] = [ts if lo is None else min(lo, ts), ts if hi is None else max(hi, ts)]

    for k, samples in expected.items():
        got = actual.get(k)
        if got is None:
            c["missing_series"] += 1
            if len(ex["missing_series"]) < examples:
                ex["missing_series"].append(f"{fmt_key(k)} ({len(samples)} samples)")
            for t, _ in samples:
                note("missing", "", t)
            continue
        by_ts = {}
        for t, v in got:
            by_ts.setdefault(t, []).append(v)
        want = {}
        for t, v in samples:
            want.setdefault(t, []).append(v)
        for t, vs in want.items():
            g = by_ts.get(t)
            if not g:
                note("missing", f"{fmt_key(k)} @{t}", t)
                continue
            if len(g) > len(vs):
                note("dup", f"{fmt_key(k)} @{t}: {len(g)} times {g[:4]}", t)
            if not eq(vs[0], g[0]):
                note("value", f"{fmt_key(k)} @{t}: stored {vs[0]!r}, received {g[0]!r}")
        for t in by_ts:
            if t not in want:
                note("extra", f"{fmt_key(k)} @{t}: {by_ts[t][:4]}", t)
    for k, got in actual.items():
        if k not in expected:
            c["extra_series"] += 1
            if len(ex["extra_series"]) < examples:
                ex["extra_series"].append(f"{fmt_key(k)} ({len(got)} samples)")
            for t, _ in got:
                note("extra", "", t)
    for kind, msgs in ex.items():
        if c[kind]:
            sp = span.get(kind)
            when = f" (timestamps {sp[0]}..{sp[1]})" if sp and sp[0] is not None else ""
            fail.check(False, f"{what}: {c[kind]} {kind.replace('_', ' ')}{when}" +
                       (", e.g. " + "; ".join(msgs) if msgs else ""))
    c["spans"] = span
    return c


def count_samples(d):
    return sum(len(s) for s in d.values())


def finish(fail, work, name, kind):
    """Stops every process, removes the work dir (kept, and named, on a
    failure) and reports the test's checks, naming Prometheus as the sender."""
    kt.stop_all()
    if not fail.items:
        rmtree(work)
    else:
        print("work dir kept:", work)
    fail.finish(name + (" (prometheus as the sender)" if kind == "prometheus" else ""))


def rmtree(path):
    shutil.rmtree(path, ignore_errors=True)


def fleet_cmd(port, nodes, sd_file, interval="1s"):
    return [kt.KELVIN, "sim", "fleet", f"--nodes={nodes}", f"--listen=127.0.0.1:{port}", f"--sd-file={sd_file}",
            f"--update-interval={interval}", "--log.level=warn"]


def start_fleet(work, nodes, interval="1s"):
    """`kelvin sim fleet` with `nodes` nodes; returns (proc, sd file)."""
    port = kt.free_port()
    sd = os.path.join(work, "fleet.json")
    p = kt.start(fleet_cmd(port, nodes, sd, interval), log=os.path.join(work, "fleet.log"))
    kt.wait_http(f"http://127.0.0.1:{port}/-/healthy", deadline=30, proc=p)
    kt.wait_until("the fleet's sd file", lambda: os.path.exists(sd), 10, 0.1)
    return p, sd
