"""bench/benchlib.py -- what the benchmark scripts share: /proc readings (CPU
time and memory of a process, read the same way for Kelvin and its peers),
free loopback ports, and the processes a benchmark starts (every one stopped
by cleanup(), failure included)."""
import os
import socket
import subprocess

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
