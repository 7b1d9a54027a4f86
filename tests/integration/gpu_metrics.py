#!/usr/bin/python3
"""The GPU collector end to end: `kelvin agent --gpu.simulate` over HTTP.

- every metric of dcgm-exporter's default set, for every simulated GPU, with
  dcgm-exporter's label set (gpu, UUID, pci_bus_id, device, modelName,
  Hostname, DCGM_FI_DRIVER_VERSION), HELP and TYPE; values in its units;
  the real prometheus_client parsers accept both formats;
- no value is a DCGM blank sentinel;
- a counters file in dcgm-exporter's format selects the set (a stock
  dcgm-exporter row layout, label rows, an unknown DCGM_EXP_* row);
- with NVML absent the agent still serves host metrics and
  kelvin_gpu_nvml_up{reason=...} 0, and no DCGM_* metric;
- MIG instances are their own entities;
- a GPU falling off the bus: kelvin_gpu_lost 1, its metrics gone, the
  XID 79 counted.
"""
import os
import sys
import tempfile
import time
import traceback

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import kelvintest as kt  # noqa: E402

from prometheus_client.openmetrics import parser as om_parser  # noqa: E402
from prometheus_client import parser as text_parser  # noqa: E402

DEFAULT = [
    ("DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz)."),
    ("DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz)."),
    ("DCGM_FI_DEV_MEMORY_TEMP", "gauge", "Memory temperature (in C)."),
    ("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C)."),
    ("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W)."),
    ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter", "Total energy consumption since boot (in mJ)."),
    ("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", "Total number of PCIe retries."),
    ("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %)."),
    ("DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %)."),
    ("DCGM_FI_DEV_ENC_UTIL", "gauge", "Encoder utilization (in %)."),
    ("DCGM_FI_DEV_DEC_UTIL", "gauge", "Decoder utilization (in %)."),
    ("DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered."),
    ("DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB)."),
    ("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB)."),
    ("DCGM_FI_DEV_FB_RESERVED", "gauge", "Framebuffer memory reserved (in MiB)."),
    ("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "counter", "Total number of NVLink bandwidth counters for all lanes."),
    ("DCGM_FI_DEV_VGPU_LICENSE_STATUS", "gauge", "vGPU License status"),
    ("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "counter", "Number of remapped rows for uncorrectable errors"),
    ("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "counter", "Number of remapped rows for correctable errors"),
    ("DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge", "Whether remapping of rows has failed"),
    ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gauge", "Ratio of time the graphics engine is active."),
    ("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gauge", "Ratio of cycles the tensor (HMMA) pipe is active."),
    ("DCGM_FI_PROF_DRAM_ACTIVE", "gauge",
     "Ratio of cycles the device memory interface is active sending or receiving data."),
    ("DCGM_FI_PROF_PCIE_TX_BYTES", "gauge",
     "The rate of data transmitted over the PCIe bus - including both protocol headers and data payloads - "
     "in bytes per second."),
    ("DCGM_FI_PROF_PCIE_RX_BYTES", "gauge",
     "The rate of data received over the PCIe bus - including both protocol headers and data payloads - "
     "in bytes per second."),
]
# dcgm-exporter's label set, plus simulated="true" because these GPUs are.
GPU_LABELS = {"gpu", "UUID", "pci_bus_id", "device", "modelName", "Hostname", "DCGM_FI_DRIVER_VERSION", "simulated"}
BLANKS = (9223372036854775792.0, 140737488355328.0)

OM_ACCEPT = "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5"


def scrape_until(url, pred, deadline=20):
    """Scrapes until pred(samples) holds (bounded in time); returns the last scrape."""
    end = time.time() + deadline
    last = None
    while time.time() < end:
        last = kt.scrape(url + "/metrics")
        if pred(last[0]):
            return last
        time.sleep(0.3)
    return last


def gpus_of(samples, name):
    return sorted(l.get("gpu") for (l, _) in kt.by_name(samples, name))


f = kt.Failures()
tmp = tempfile.mkdtemp(prefix="kelvin-gpu-")
try:
    # --- the default set on two simulated H100s --------------------------------
    p, url = kt.start_agent("--gpu.simulate=healthy", "--gpu.simulate.count=2", "--gpu.simulate.model=h100",
                            "--collect.interval=500ms")
    samples, types, helps = scrape_until(
        url, lambda s: gpus_of(s, "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL") == ["0", "1"])
    for name, typ, help_ in DEFAULT:
        got = gpus_of(samples, name)
        f.check(got == ["0", "1"], f"{name}: series for GPUs {got}, want 0 and 1")
        f.check(types.get(name) == typ, f"{name}: TYPE {types.get(name)}, want {typ}")
        f.check(helps.get(name) == help_, f"{name}: HELP {helps.get(name)!r}")
        for (labels, v) in kt.by_name(samples, name):
            extra = set(labels) - GPU_LABELS
            if name == "DCGM_FI_DEV_XID_ERRORS":
                f.check(extra == {"err_code", "err_msg"}, f"{name}: labels {sorted(labels)}")
            else:
                f.check(set(labels) == GPU_LABELS, f"{name}: labels {sorted(labels)}, want {sorted(GPU_LABELS)}")
            f.check(labels.get("device") == "nvidia" + labels.get("gpu", "?"), f"{name}: device {labels.get('device')}")
            f.check(labels.get("UUID", "").startswith("GPU-"), f"{name}: UUID {labels.get('UUID')}")
            f.check(v not in BLANKS and v == v, f"{name}{labels}: sentinel value {v}")
    for (labels, v) in kt.by_name(samples, "DCGM_FI_PROF_DRAM_ACTIVE"):
        f.check(0 <= v <= 1, f"DRAM_ACTIVE must be a 0-1 ratio, got {v}")
    for (labels, v) in kt.by_name(samples, "DCGM_FI_DEV_POWER_USAGE"):
        f.check(10 < v < 1500, f"POWER_USAGE must be watts, got {v}")
    up = kt.by_name(samples, "kelvin_gpu_nvml_up")
    f.check(len(up) == 1 and up[0][1] == 1, f"kelvin_gpu_nvml_up: {up}")
    f.check(len(kt.by_name(samples, "kelvin_gpu_violation_seconds_total")) == 12, "violation counters: 6 per GPU")
    f.check(len(kt.by_name(samples, "kelvin_gpu_lost")) == 2, "kelvin_gpu_lost per GPU")
    for (n, labels, v) in samples:
        f.check(v not in BLANKS, f"{n}{labels}: DCGM blank sentinel {v}")

    # the real parsers accept both renderings
    st, hdr, body = kt.http(url + "/metrics")
    try:
        list(text_parser.text_string_to_metric_families(body.decode()))
    except Exception as e:  # noqa: BLE001
        f.check(False, f"prometheus_client rejected the text output: {e}")
    st, hdr, om = kt.http(url + "/metrics", headers={"Accept": OM_ACCEPT})
    try:
        fams = {fam.name: fam for fam in om_parser.text_string_to_metric_families(om.decode())}
        f.check("kelvin_gpu_memory_temperature_celsius" in fams, "OpenMetrics: Kelvin GPU metric missing")
        fam = fams.get("kelvin_gpu_memory_temperature_celsius")
        f.check(fam is not None and fam.unit == "celsius", "OpenMetrics: UNIT celsius expected")
    except Exception as e:  # noqa: BLE001
        f.check(False, f"prometheus_client rejected the OpenMetrics output: {e}")
    kt.stop(p)

    # --- a counters file selects the set ----------------------------------------
    csv = os.path.join(tmp, "counters.csv")
    with open(csv, "w") as fh:
        fh.write("# Format\n# DCGM FIELD, Prometheus metric type, help message\n\n"
                 "DCGM_FI_DEV_GPU_TEMP, gauge, GPU temperature (in C).\n"
                 "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL, counter, Total number of double-bit volatile ECC errors.\n"
                 "# DCGM_FI_DEV_SM_CLOCK, gauge, SM clock frequency (in MHz).\n"
                 "DCGM_EXP_XID_ERRORS_COUNT, gauge, Count of XID Errors within user-specified time window.\n"
                 "DCGM_FI_DRIVER_VERSION, label, Driver Version\n"
                 "DCGM_FI_DEV_SERIAL, label, Device Serial Number\n")
    p, url = kt.start_agent("--gpu.simulate=healthy", "--gpu.simulate.count=1",
                            f"--collector.gpu.counters-file={csv}")
    samples, _, _ = scrape_until(url, lambda s: bool(kt.by_name(s, "DCGM_FI_DEV_GPU_TEMP")))
    gpu_names = {n for (n, _, _) in samples if n.startswith("DCGM_") or n.startswith("kelvin_gpu_")}
    f.check(gpu_names == {"DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "kelvin_gpu_nvml_up",
                          "kelvin_gpu_lost"}, f"counters file: got {sorted(gpu_names)}")
    for (labels, _) in kt.by_name(samples, "DCGM_FI_DEV_GPU_TEMP"):
        f.check("DCGM_FI_DEV_SERIAL" in labels and "DCGM_FI_DRIVER_VERSION" in labels,
                f"label rows must become labels: {sorted(labels)}")
    kt.stop(p)

    # a malformed counters file stops the agent with a message
    bad = os.path.join(tmp, "bad.csv")
    with open(bad, "w") as fh:
        fh.write("DCGM_FI_DEV_GPU_TEMP gauge no commas\n")
    log = os.path.join(tmp, "bad.log")
    pb = kt.start([kt.KELVIN, "agent", f"--web.listen-address=127.0.0.1:{kt.free_port()}", "--statsd.listen-udp=",
                   "--collector.xid.kmsg-path=", "--gpu.simulate=healthy", f"--collector.gpu.counters-file={bad}"],
                  log=log)
    try:
        rc = pb.wait(20)
    except Exception:  # noqa: BLE001
        rc = None
    kt.stop(pb)
    f.check(rc not in (None, 0), f"agent with a malformed counters file exited with {rc}")
    with open(log) as fh:
        f.check("line 1" in fh.read(), "the error should name the line")

    # --- NVML absent: host metrics still served --------------------------------
    p, url = kt.start_agent("--nvml.library=/nonexistent/libnvidia-ml.so.1")
    samples, _, _ = scrape_until(url, lambda s: bool(kt.by_name(s, "kelvin_gpu_nvml_up")))
    up = kt.by_name(samples, "kelvin_gpu_nvml_up")
    f.check(len(up) == 1 and up[0][1] == 0 and "nonexistent" in up[0][0].get("reason", ""),
            f"NVML absent: kelvin_gpu_nvml_up {up}")
    f.check(not any(n.startswith("DCGM_") for (n, _, _) in samples), "NVML absent: DCGM metrics served")
    f.check(any(n.startswith("node_") for (n, _, _) in samples), "NVML absent: host metrics missing")
    kt.stop(p)

    # --- MIG ---------------------------------------------------------------------
    env = dict(os.environ, KELVIN_SIM_MIG="0:3g.40gb,3g.40gb")
    p, url = kt.start_agent("--gpu.simulate=healthy", "--gpu.simulate.count=2", env=env)
    samples, _, _ = scrape_until(url, lambda s: any("GPU_I_ID" in l for (l, _) in kt.by_name(s, "DCGM_FI_DEV_FB_USED")))
    inst = [l for (l, _) in kt.by_name(samples, "DCGM_FI_DEV_FB_USED") if l.get("gpu") == "0"]
    f.check(len(inst) == 2 and all(l.get("GPU_I_PROFILE") == "3g.40gb" for l in inst),
            f"MIG: FB_USED series on GPU 0: {inst}")
    f.check(len({l.get("GPU_I_ID") for l in inst}) == 2, "MIG: GPU_I_ID must differ per instance")
    f.check(not any(l.get("gpu") == "0" for (l, _) in kt.by_name(samples, "DCGM_FI_DEV_GPU_UTIL")),
            "MIG: GPU_UTIL must be absent on a MIG GPU (NVML does not support it)")
    f.check(any(l.get("gpu") == "1" for (l, _) in kt.by_name(samples, "DCGM_FI_DEV_GPU_UTIL")),
            "MIG: GPU_UTIL must stay on the non-MIG GPU")
    kt.stop(p)

    # --- a GPU falls off the bus ---------------------------------------------------
    env = dict(os.environ, KELVIN_SIM_TIME_SCALE="200")  # loss at model 300 s = 1.5 s
    p, url = kt.start_agent("--gpu.simulate=fell-off-bus", "--gpu.simulate.count=2", "--collect.interval=250ms",
                            env=env)
    samples, _, _ = scrape_until(
        url, lambda s: any(l.get("gpu") == "0" and v == 1 for (l, v) in kt.by_name(s, "kelvin_gpu_lost")))
    lost = {l.get("gpu"): v for (l, v) in kt.by_name(samples, "kelvin_gpu_lost")}
    f.check(lost == {"0": 1, "1": 0}, f"fell-off-bus: kelvin_gpu_lost {lost}")
    f.check("0" not in gpus_of(samples, "DCGM_FI_DEV_GPU_TEMP"), "fell-off-bus: the lost GPU's metrics are served")
    f.check("1" in gpus_of(samples, "DCGM_FI_DEV_GPU_TEMP"), "fell-off-bus: the healthy GPU's metrics vanished")
    xids = [(l, v) for (l, v) in kt.by_name(samples, "kelvin_gpu_xid_errors_total") if l.get("gpu") == "0"]
    f.check(any(l.get("xid") == "79" and v >= 1 for (l, v) in xids), f"fell-off-bus: XID 79 not counted: {xids}")
    f.check(p.poll() is None, "the agent died when a GPU was lost")
    kt.stop(p)
except Exception:  # noqa: BLE001 - an exception must fail the test, not vanish in finally
    f.check(False, "exception:\n" + traceback.format_exc())
finally:
    f.finish("gpu_metrics")
