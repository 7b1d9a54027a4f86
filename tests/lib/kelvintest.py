"""tests/lib/kelvintest.py -- shared helpers for Kelvin's integration tests.

Starts processes on loopback ports picked free at run time, waits for them
with a deadline, stops them (even when a test fails), scrapes and parses the
text exposition format. Standard library only (plus Debian's
python3-prometheus-client where a test wants the real client's parsers).
"""
import gzip
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

KELVIN = os.environ.get("KELVIN_BIN", "build/kelvin")
PEERS = os.environ.get("KELVIN_PEERS", "build/peers")
SOURCE = os.environ.get("KELVIN_SOURCE_DIR", ".")

_procs = []


def free_port(kind=socket.SOCK_STREAM):
    s = socket.socket(socket.AF_INET, kind)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def start(cmd, env=None, log=None):
    """Starts cmd; its output goes to log (a path) or is kept in a temp file."""
    out = open(log or os.devnull, "w")
    p = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env)
    p._log_path = log
    _procs.append(p)
    return p


def stop(p, timeout=10):
    if p.poll() is None:
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
    if p in _procs:
        _procs.remove(p)
    return p.returncode


def stop_all():
    for p in list(_procs):
        stop(p)


def start_agent(*args, env=None, log=None):
    """Starts `kelvin agent` on a free loopback port; returns (proc, base_url)."""
    port = free_port()
    cmd = [KELVIN, "agent", f"--web.listen-address=127.0.0.1:{port}"]
    if not any(a.startswith("--statsd.listen-udp") for a in args):
        cmd.append("--statsd.listen-udp=")
    if not any(a.startswith("--collector.xid.kmsg-path") for a in args):
        cmd.append("--collector.xid.kmsg-path=")
    cmd += list(args)
    p = start(cmd, env=env, log=log)
    url = f"http://127.0.0.1:{port}"
    wait_http(url + "/-/healthy", proc=p)
    return p, url


def start_fleet(tmp, nodes, gpus, scenario, seed, name="fleet", interval="1s"):
    """Starts `kelvin sim fleet` on a free loopback port, its targets written to
    tmp/<name>.json (file_sd); returns (proc, base_url, sd file) once it
    answers and the file exists."""
    port = free_port()
    sd = os.path.join(tmp, name + ".json")
    p = start([KELVIN, "sim", "fleet", "--nodes", str(nodes), "--gpus", str(gpus), "--scenario", scenario,
               "--seed", str(seed), "--update-interval", interval, "--listen", f"127.0.0.1:{port}",
               "--sd-file", sd], log=os.path.join(tmp, name + ".log"))
    url = f"http://127.0.0.1:{port}"
    wait_http(url + "/-/healthy", proc=p)
    end = time.time() + 10
    while not os.path.exists(sd) and time.time() < end:
        time.sleep(0.1)
    if not os.path.exists(sd):
        raise AssertionError(f"the simulated fleet wrote no {sd}")
    return p, url, sd


def wait_until(what, fn, deadline=20.0, step=0.5):
    """Calls fn until it returns a true value; returns it, or raises after deadline s."""
    end = time.time() + deadline
    last = None
    while time.time() < end:
        last = fn()
        if last:
            return last
        time.sleep(step)
    raise AssertionError(f"timed out after {deadline:g}s waiting for {what} (last: {last!r})")


def wait_http(url, deadline=30, proc=None):
    end = time.time() + deadline
    last = None
    while time.time() < end:
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"process exited with {proc.returncode} before {url} came up")
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                r.read()
                return
        except Exception as e:  # noqa: BLE001 - any failure means "not yet"
            last = e
            time.sleep(0.1)
    raise AssertionError(f"{url} did not come up within {deadline}s: {last}")


def http(url, method="GET", data=None, headers=None, timeout=10):
    """Returns (status, headers, body bytes) without raising on 4xx/5xx."""
    req = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            body = r.read()
            if r.headers.get("Content-Encoding") == "gzip":
                body = gzip.decompress(body)
            return r.status, r.headers, body
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()


LINE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?[ \t]+(\S+)(?:[ \t]+(-?\d+))?$')
LABEL = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*,?')


def parse_text(text):
    """Parses text 0.0.4 into (samples, types, helps).
    samples: list of (name, labels dict, value float)."""
    samples, types, helps = [], {}, {}
    for line in text.splitlines():
        if not line.strip():
            continue
        if line.startswith("# TYPE "):
            _, _, name, typ = line.split(" ", 3)
            types[name] = typ
            continue
        if line.startswith("# HELP "):
            parts = line.split(" ", 3)
            helps[parts[2]] = parts[3] if len(parts) > 3 else ""
            continue
        if line.startswith("#"):
            continue
        m = LINE.match(line)
        if not m:
            raise AssertionError(f"unparseable exposition line: {line!r}")
        labels = {}
        if m.group(2):
            pos, s = 0, m.group(2)
            while pos < len(s):
                lm = LABEL.match(s, pos)
                if not lm:
                    raise AssertionError(f"bad labels in {line!r}")
                labels[lm.group(1)] = lm.group(2).replace('\\"', '"').replace("\\n", "\n").replace("\\\\", "\\")
                pos = lm.end()
        samples.append((m.group(1), labels, float(m.group(3))))
    return samples, types, helps


def scrape(url, headers=None):
    status, hdrs, body = http(url, headers=headers)
    if status != 200:
        raise AssertionError(f"scrape {url}: HTTP {status}: {body[:200]!r}")
    return parse_text(body.decode())


def by_name(samples, name):
    return [(l, v) for (n, l, v) in samples if n == name]


class Failures:
    """Collects check failures so a test reports all of them, then fails."""

    def __init__(self):
        self.items = []

    def check(self, cond, msg):
        if not cond:
            self.items.append(msg)
        return cond

    def finish(self, name):
        """Call from a `finally:` block: an exception on its way out (a
        process that did not start, an assertion) counts as a failure."""
        exc = sys.exc_info()[1]
        if exc is not None:
            import traceback
            self.items.append("exception: " + "".join(traceback.format_exception(exc)).strip())
        stop_all()
        if self.items:
            print(f"{name}: FAILED")
            for m in self.items:
                print("  -", m)
            sys.exit(1)
        print(f"{name}: ok")
        sys.exit(0)


def run_capture(argv, cwd=None, timeout=60):
    """Runs a command to its end: (exit status, stdout, stderr) as text;
    124 and "timed out" when it outlives timeout seconds."""
    try:
        p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout, cwd=cwd)
    except subprocess.TimeoutExpired:
        return 124, "", "timed out"
    return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")


def kelvin_and_promtool(test):
    """(source dir, kelvin, promtool), absolute, for a test that compares
    kelvin with promtool; None when either is missing (said on stderr,
    with the test's name: the test then exits 1)."""
    src = os.environ.get("KELVIN_SOURCE_DIR", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    kelvin = os.environ.get("KELVIN_BIN")
    promtool = os.path.join(os.environ.get("KELVIN_PEERS", os.path.join(src, "build", "peers")), "bin", "promtool")
    if not kelvin or not os.access(kelvin, os.X_OK):
        print("%s: KELVIN_BIN is not set to an executable" % test, file=sys.stderr)
        return None
    if not os.access(promtool, os.X_OK):
        print("%s: %s not found (run scripts/peers)" % (test, promtool), file=sys.stderr)
        return None
    return src, os.path.abspath(kelvin), os.path.abspath(promtool)


def report_agreement(failures, nfiles):
    """The end of a file-by-file comparison: the problems on stderr, or
    that all nfiles agree. Returns the exit status."""
    if failures:
        print("\n%d problem(s):" % len(failures), file=sys.stderr)
        for f in failures:
            print("  " + f, file=sys.stderr)
        return 1
    print("\nall %d files agree" % nfiles)
    return 0


def fixture_marker(path, name):
    """The text of a fixture's `# NAME: text` line among its first five, or None."""
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f.read().splitlines()[:5]:
            if line.startswith("# " + name + ":"):
                return line.split(":", 1)[1].strip()
    return None
