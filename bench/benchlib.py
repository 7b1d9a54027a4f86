"""bench/benchlib.py -- what the benchmark scripts share: /proc readings (CPU
time and memory of a process, read the same way for Kelvin and its peers),
free loopback ports, and the processes a benchmark starts (every one stopped
by cleanup(), failure included)."""
import os
import socket
import subprocess
import time
import urllib.request

procs = []  # every process started with start(), stopped in cleanup()


class BenchError(Exception):
    pass


def log(msg):
    print(msg, flush=True)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def start(cmd, **kw):
    kw.setdefault("stdout", subprocess.DEVNULL)
    kw.setdefault("stderr", subprocess.DEVNULL)
    p = subprocess.Popen(cmd, **kw)
    procs.append(p)
    return p


def stop(p, timeout=20):
    if p.poll() is None:
        p.terminate()
        try:
            p.wait(timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
    if p in procs:
        procs.remove(p)


def cleanup():
    for p in reversed(list(procs)):
        try:
            stop(p)
        except OSError:
            pass
    procs.clear()


def cpu_seconds(pid):
    """CPU time of every live thread of pid, in seconds, with nanosecond
    resolution (schedstat), falling back to clock ticks (10 ms)."""
    try:
        total = 0
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[0])
        return total / 1e9
    except OSError:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            return 0.0
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def status_kib(pid, key):
    """A field of /proc/PID/status in KiB (VmRSS, VmHWM), 0 if absent."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def http_get(url, timeout=10):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read().decode("utf-8", "replace")


def tail(path, n=600):
    """The last n characters of a log file ("" when there is none)."""
    if not path:
        return ""
    try:
        with open(path, errors="replace") as f:
            return f.read()[-n:].strip()
    except OSError:
        return ""


def wait_up(url, proc=None, log_path=None, deadline=60):
    """Waits until url answers; BenchError when proc exits first or time runs out."""
    end = time.time() + deadline
    while time.time() < end:
        if proc is not None and proc.poll() is not None:
            raise BenchError(f"{url}: the process exited with {proc.returncode}: {tail(log_path)}")
        try:
            http_get(url, 2)
            return
        except Exception:  # noqa: BLE001 - not up yet
            time.sleep(0.2)
    raise BenchError(f"{url} did not come up within {deadline} s: {tail(log_path)}")


def metric_values(text, name):
    """{labels-string: value} of every sample of `name` in an exposition body."""
    out = {}
    for line in text.splitlines():
        if line.startswith(name + "{") or line.startswith(name + " "):
            head, _, val = line.rpartition(" ")
            try:
                out[head[len(name):]] = float(val)
            except ValueError:
                pass
    return out


def start_fleet(kelvin, tmp, nodes, interval_s):
    """`kelvin sim fleet` of `nodes` nodes updating every interval_s, its
    targets in tmp/fleet.json: (proc, base url, sd file, series per node, from
    one node's body -- scrapers add their own per-target series)."""
    port = free_port()
    sd = os.path.join(tmp, "fleet.json")
    flog = os.path.join(tmp, "fleet.log")
    fh = open(flog, "w")
    p = start([kelvin, "sim", "fleet", "--nodes", str(nodes), "--listen", f"127.0.0.1:{port}", "--sd-file", sd,
               "--update-interval", f"{int(interval_s * 1000)}ms", "--log.level", "warn"], stdout=fh, stderr=fh)
    base = f"http://127.0.0.1:{port}"
    wait_up(base + "/-/healthy", p, flog)
    if not os.path.exists(sd):
        raise BenchError(f"the fleet wrote no sd file: {tail(flog)}")
    body = http_get(base + "/node/0/metrics", 30)
    per_node = sum(1 for line in body.splitlines() if line and not line.startswith("#"))
    return p, base, sd, per_node
