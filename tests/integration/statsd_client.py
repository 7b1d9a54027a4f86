#!/usr/bin/python3
"""StatsD end to end: a real StatsD client and raw DogStatsD datagrams into
`kelvin agent --statsd.listen-udp`, checked on /metrics.

- Debian's python3-statsd (the client many training scripts use): incr,
  decr, gauge (absolute, negative, delta), timing (ms -> histogram in
  seconds), set, a pipeline (several lines in one datagram), a prefix.
- raw DogStatsD: tags, sample rates, extended aggregation (v1:v2:v3|h),
  distributions, events and service checks (ignored, counted).
- names mapped as statsd_exporter maps them (dots and dashes to '_').
- malformed lines are counted by reason and do not disturb the good ones
  in the same datagram; the kelvin_statsd_* self metrics add up.
"""
import os
import socket
import sys
import time
import traceback

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import kelvintest as kt  # noqa: E402

import statsd  # noqa: E402  (Debian's python3-statsd)


def value(samples, name, **labels):
    vals = [v for (n, l, v) in samples if n == name and l == labels]
    return vals[0] if len(vals) == 1 else None


def wait_for(url, pred, deadline=15):
    """Scrapes until pred(samples) holds (bounded in time); returns samples."""
    end = time.time() + deadline
    samples = []
    while time.time() < end:
        samples, _, _ = kt.scrape(url + "/metrics")
        if pred(samples):
            return samples
        time.sleep(0.25)
    return samples


f = kt.Failures()
try:
    udp_port = kt.free_port(socket.SOCK_DGRAM)
    p, url = kt.start_agent("--gpu.simulate=healthy", "--gpu.simulate.count=1",
                            f"--statsd.listen-udp=127.0.0.1:{udp_port}")

    c = statsd.StatsClient("127.0.0.1", udp_port, prefix="train")
    c.incr("steps")
    c.incr("steps", 4)
    c.decr("retries", 0)          # a counter at 0
    c.gauge("loss", 0.25)
    c.gauge("loss", 0.1, delta=True)
    c.gauge("lr", -0.5)           # the client sends 0|g then -0.5|g
    c.timing("step-time", 320)    # ms
    c.timing("step-time", 20)
    c.set("ranks", "r0")
    c.set("ranks", "r1")
    c.set("ranks", "r0")
    with c.pipeline() as pipe:    # one datagram, several lines
        pipe.incr("pipe.a", 2)
        pipe.gauge("pipe.b", 7)
        pipe.timing("pipe.c", 1500)

    raw = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    dest = ("127.0.0.1", udp_port)
    for d in (
        b"tokens_per_sec:1200|g|#rank:0,host:n1\ntokens_per_sec:1100|g|#rank:1,host:n1",
        b"batch.lat:1:2:3|h|#rank:0",
        b"req:1|c|@0.1|#route:fwd",
        b"gpu.mem:1024|d",
        b"_e{5,4}:title|text|#t:1\n_sc|trainer.up|0",
        b"good.one:1|c\nthis is not statsd\nbad.value:abc|g\nneg.counter:-1|c\ngood.two:2|c",
        b"influx_style,env=prod,zone=a:3|c",
    ):
        raw.sendto(d, dest)
    raw.close()

    def done(s):
        return value(s, "good_two") == 2.0 and value(s, "train_pipe_c_count") == 1.0 and \
            value(s, "influx_style", env="prod", zone="a") == 3.0
    samples = wait_for(url, done)
    f.check(done(samples), "StatsD series did not all appear on /metrics within 15 s")

    # python3-statsd
    f.check(value(samples, "train_steps") == 5.0, f"train_steps: {value(samples, 'train_steps')}")
    f.check(value(samples, "train_retries") == 0.0, f"train_retries: {value(samples, 'train_retries')}")
    f.check(abs((value(samples, "train_loss") or 0) - 0.35) < 1e-9, f"train_loss: {value(samples, 'train_loss')}")
    f.check(value(samples, "train_lr") == -0.5, f"train_lr: {value(samples, 'train_lr')}")
    f.check(value(samples, "train_step_time_count") == 2.0, "train_step_time_count")
    f.check(abs((value(samples, "train_step_time_sum") or 0) - 0.34) < 1e-9,
            f"timers are observed in seconds: sum {value(samples, 'train_step_time_sum')}")
    f.check(value(samples, "train_step_time_bucket", le="0.025") == 1.0, "20 ms falls in le=0.025")
    f.check(value(samples, "train_step_time_bucket", le="0.5") == 2.0, "320 ms falls in le=0.5")
    f.check(value(samples, "train_step_time_bucket", le="+Inf") == 2.0, "+Inf bucket")
    f.check(value(samples, "train_ranks") == 2.0, f"set of distinct ranks: {value(samples, 'train_ranks')}")
    f.check(value(samples, "train_pipe_a") == 2.0 and value(samples, "train_pipe_b") == 7.0,
            "pipeline lines")
    f.check(value(samples, "train_pipe_c_sum") == 1.5, "pipeline timer")

    # DogStatsD
    f.check(value(samples, "tokens_per_sec", host="n1", rank="0") == 1200.0, "tags rank 0")
    f.check(value(samples, "tokens_per_sec", host="n1", rank="1") == 1100.0, "tags rank 1")
    f.check(value(samples, "batch_lat_count", rank="0") == 3.0 and value(samples, "batch_lat_sum", rank="0") == 6.0,
            "extended aggregation")
    f.check(value(samples, "req", route="fwd") == 10.0, f"counter @0.1 counts 10: {value(samples, 'req', route='fwd')}")
    f.check(value(samples, "gpu_mem_sum") == 1024.0, "distribution observed as is")
    f.check(value(samples, "good_one") == 1.0, "a good line before a malformed one")

    # types as statsd_exporter serves them
    _, types, _ = kt.scrape(url + "/metrics")
    for name, want in (("train_steps", "counter"), ("train_loss", "gauge"), ("train_step_time", "histogram"),
                       ("train_ranks", "gauge"), ("tokens_per_sec", "gauge")):
        f.check(types.get(name) == want, f"TYPE {name} is {types.get(name)}, want {want}")

    # self metrics
    f.check((value(samples, "kelvin_statsd_packets_total") or 0) >= 15, "packets counted")
    f.check(value(samples, "kelvin_statsd_malformed_total", reason="malformed_line") == 1.0, "malformed_line")
    f.check(value(samples, "kelvin_statsd_malformed_total", reason="malformed_value") == 1.0, "malformed_value")
    f.check(value(samples, "kelvin_statsd_malformed_total", reason="illegal_negative_counter") == 1.0,
            "illegal_negative_counter")
    f.check(value(samples, "kelvin_statsd_ignored_total", kind="event") == 1.0, "event ignored and counted")
    f.check(value(samples, "kelvin_statsd_ignored_total", kind="service_check") == 1.0, "service check counted")
    series = value(samples, "kelvin_statsd_series")
    f.check(series is not None and series >= 17, f"kelvin_statsd_series {series}")

    # the agent's own metrics are still there and unharmed
    f.check(any(n == "DCGM_FI_DEV_GPU_TEMP" for (n, _, _) in samples), "GPU metrics missing")
except Exception as e:  # noqa: BLE001 - an exception must fail the test, not vanish in finish()
    traceback.print_exc()
    f.check(False, f"unexpected error: {e!r}")
finally:
    f.finish("statsd_client")
