"""bench/benchlib.py -- /proc readings shared by the benchmark scripts: CPU
time and memory of a process, read the same way for Kelvin and its peers."""
import os


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
