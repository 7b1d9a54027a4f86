#!/usr/bin/python3
"""The agent's serving path: formats by Accept, gzip, the routes, and the
promise that a hung NVML call never blocks /metrics.

- text 0.0.4 parses; OpenMetrics parses with the real prometheus_client
  OpenMetrics parser (Debian's python3-prometheus-client) and ends in # EOF;
  both carry the same series with the same names.
- gzip bodies decompress to the same families.
- /health, /-/healthy, /, 404, 405.
- with every simulated NVML call sleeping 3 s, scrapes still answer fast and
  the GPU collector is reported stale once its snapshot is old.
"""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import kelvintest as kt  # noqa: E402

from prometheus_client.openmetrics import parser as om_parser  # noqa: E402

PROM_ACCEPT = ("application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,"
               "text/plain;version=0.0.4;q=0.5,*/*;q=0.1")

f = kt.Failures()
try:
    p, url = kt.start_agent("--gpu.simulate=healthy", "--gpu.simulate.count=2")
    st, hdr, body = kt.http(url + "/metrics")
    f.check(st == 200, f"/metrics status {st}")
    f.check(hdr.get("Content-Type", "").startswith("text/plain; version=0.0.4"), f"content type {hdr.get('Content-Type')}")
    samples, types, helps = kt.parse_text(body.decode())
    names = {n for (n, _, _) in samples}
    f.check("DCGM_FI_DEV_GPU_TEMP" in names, "GPU temperature missing from text output")
    f.check("node_load1" in names or "node_memory_MemTotal_bytes" in names, "host metrics missing")
    f.check("kelvin_agent_collector_duration_seconds" in names, "self metrics missing")
    f.check(not body.endswith(b"# EOF\n"), "text format must not end with # EOF")

    st, hdr, om = kt.http(url + "/metrics", headers={"Accept": PROM_ACCEPT})
    f.check(hdr.get("Content-Type", "").startswith("application/openmetrics-text; version=1.0.0"),
            f"OpenMetrics content type {hdr.get('Content-Type')}")
    f.check(om.endswith(b"# EOF\n"), "OpenMetrics must end with # EOF")
    try:
        fams = list(om_parser.text_string_to_metric_families(om.decode()))
        om_names = {s.name for fam in fams for s in fam.samples}
        # Every text series name appears in OpenMetrics under the same name.
        missing = names - om_names
        f.check(not missing, f"names lost in OpenMetrics: {sorted(missing)[:10]}")
    except Exception as e:  # the real parser rejected our output
        f.check(False, f"prometheus_client rejected the OpenMetrics output: {e}")

    st, hdr, gz = kt.http(url + "/metrics", headers={"Accept-Encoding": "gzip"})
    f.check(hdr.get("Content-Encoding") == "gzip", "gzip not used when asked")
    gz_names = {n for (n, _, _) in kt.parse_text(gz.decode())[0]}
    f.check(gz_names == names or len(gz_names ^ names) < 3, "gzip body differs from the plain one")

    for path, want in (("/health", 200), ("/-/healthy", 200), ("/-/ready", 200), ("/", 200), ("/nope", 404)):
        st, _, _ = kt.http(url + path)
        f.check(st == want, f"{path}: status {st}, want {want}")
    st, _, _ = kt.http(url + "/metrics", method="DELETE")
    f.check(st == 405, f"DELETE /metrics: status {st}, want 405")
    kt.stop(p)

    # A driver whose every call hangs 3 s: scrapes must not wait for it.
    env = dict(os.environ, KELVIN_SIM_HANG_MS="3000")
    p, url = kt.start_agent("--gpu.simulate=healthy", "--gpu.simulate.count=1", env=env)
    worst = 0.0
    for _ in range(15):
        t = time.time()
        st, _, body = kt.http(url + "/metrics", timeout=5)
        worst = max(worst, time.time() - t)
        f.check(st == 200, f"scrape during hung NVML: status {st}")
        time.sleep(1)
    f.check(worst < 1.0, f"a scrape took {worst:.2f}s while NVML hung (must not wait for the driver)")
    samples, _, _ = kt.parse_text(body.decode())
    stale = [v for (l, v) in kt.by_name(samples, "kelvin_agent_collector_stale") if l.get("collector") == "gpu"]
    f.check(stale == [1.0], f"GPU collector should be reported stale after 15 s of hung calls, got {stale}")
    f.check(not kt.by_name(samples, "DCGM_FI_DEV_GPU_TEMP"), "stale GPU values are still served as current")
finally:
    f.finish("agent_serving")
