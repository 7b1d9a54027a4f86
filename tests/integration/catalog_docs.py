#!/usr/bin/python3
"""The catalog is the truth: docs/metrics.md is exactly what
`kelvin agent --print-catalog` prints, and every family the agent serves
(simulated GPUs, host, itself) is in the catalog with the same TYPE and HELP.
Regenerate the docs with: build/kelvin agent --print-catalog > docs/metrics.md
"""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import kelvintest as kt  # noqa: E402

f = kt.Failures()
try:
    out = subprocess.run([kt.KELVIN, "agent", "--print-catalog"], capture_output=True, text=True, timeout=30)
    f.check(out.returncode == 0, f"--print-catalog exited {out.returncode}: {out.stderr}")
    docs_path = os.path.join(kt.SOURCE, "docs", "metrics.md")
    with open(docs_path) as fh:
        docs = fh.read()
    f.check(out.stdout == docs, "docs/metrics.md differs from `kelvin agent --print-catalog`; regenerate it")

    # name -> (type, help) from the catalog's Markdown rows
    catalog = {}
    for line in out.stdout.splitlines():
        if not line.startswith("| `"):
            continue
        # name | type | unit | labels | help | source, with "\|" inside cells
        cells = [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", line)[1:-1]]
        if len(cells) == 6:
            catalog[cells[0].strip("`")] = (cells[1], cells[4])
    f.check(len(catalog) > 50, f"catalog has only {len(catalog)} metrics")

    for scenario in ("healthy", "xid-storm"):
        env = dict(os.environ, KELVIN_SIM_MIG="1:3g.40gb,2g.20gb")
        p, url = kt.start_agent(f"--gpu.simulate={scenario}", "--gpu.simulate.count=2", env=env)
        import time
        time.sleep(2.5)
        samples, types, helps = kt.scrape(url + "/metrics")
        kt.stop(p)
        for name, typ in types.items():
            if not f.check(name in catalog, f"{scenario}: served family {name} is not in the catalog"):
                continue
            f.check(catalog[name][0] == typ, f"{name}: served as {typ}, catalog says {catalog[name][0]}")
            f.check(catalog[name][1] == helps.get(name, ""), f"{name}: HELP differs from the catalog")
finally:
    f.finish("catalog_docs")
