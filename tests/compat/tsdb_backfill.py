#!/usr/bin/python3
"""`kelvin tsdb` against Prometheus 2.42's promtool on the same inputs.

The OpenMetrics files of tests/integration/tsdb_tools.py (special values,
escapes, 60 labels, duplicates and out-of-order samples, several blocks)
and a bigger generated one (3000 GPU-like series over 6 h, one scrape per
minute, in scrape order) are backfilled by both
`$KELVIN_PEERS/bin/promtool tsdb create-blocks-from openmetrics` and
`kelvin tsdb create-blocks-from openmetrics`, with the default block
duration and with --max-block-duration=6h and 20h. Then:
- `promtool tsdb dump` and `kelvin tsdb dump` print the same lines, in the
  same order (so the same series, values to the bit as %g prints them, and
  timestamps), also with --min-time, --max-time and --match; and a
  battery of --match values (comments, keywords as names, parse errors):
  the same output, stderr and exit status;
- the same blocks: as many, with the same [minTime, maxTime), samples and
  series (`tsdb list`, also -r's human-readable times and durations), and
  the same table printed by the backfill itself;
- `tsdb analyze` of the newest block: the same ID-independent figures and
  the same lists (compared whole, --limit large: promtool orders ties at
  random);
- malformed inputs: both fail, with promtool's message (kelvin adds the
  line). Where kelvin's parser finds a repeated label name in its first
  pass, promtool finds it while writing; the words are the same.

Deliberate differences not exercised here (see src/tools/tsdb_backfill.c):
promtool fails with "out of order sample" when such a sample falls in a
later 5000-sample commit than its predecessor (kelvin always drops it, as
promtool does within one commit); negative timestamps; chunk counts and
sizes (kelvin's own chunk encodings). promtool 2.42 needs a `wal` directory
to read a data directory; the test creates an empty one.
"""
import filecmp
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
import kelvintest as kt  # noqa: E402
import tsdb_tools as tt  # noqa: E402

PROMTOOL = os.path.join(kt.PEERS, "bin", "promtool")
# --match values for the mixed case: selections, comments, keywords as
# names, and parse errors with their positions.
MATCHES = [
    'special{kind="nan"}', '#c\nspecial{kind=~"n.*"}', "special #c", 'special{kind="neg"} # c', "special",
    '{kind=~"n.*", kind!="neg"}', 'gpu_util{gpu=~"1|2"}', 'esc_metric{u="\u00fc\u65e5\u672c x"}',
    "esc_metric{v='a\\\\b\"c\\nd'}", 'esc_metric{u=`\u00fc\u65e5\u672c x`}',
    '{__name__=~"special|gpu_util", kind!~"n.*"}', 'special{__name__="gpu_util"}', "{}", '{kind="",}', "sum", "bool",
    "offset", "", " ", "special[5m]", "rate(special[5m])", "special offset 5m", 'special{kind="a', '{kind=~"("}',
    '{kind=~"a)|(b"}', "special{", "{kind}", "sum(special)", "special bar", 'special{kind="\\x"}', "t\u00e9mp",
    "special,", 'special{kind=="nan"}', "{,}",
]


class GpuCase:
    """5 DCGM-like gauges x 8 GPUs x nodes, scraped every step seconds,
    written straight to a file (a million rows do not stay in memory)."""

    name = "gpu"

    def __init__(self, nodes=75, step=60, hours=6):
        self.nodes, self.step, self.hours = nodes, step, hours

    def write(self, path):
        rnd = random.Random(42)
        metrics = ["DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE",
                   "DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_FB_USED"]
        series = []
        for m in metrics:
            for n in range(self.nodes):
                for g in range(8):
                    series.append(f'{m}{{gpu="{g}",UUID="GPU-{n:04x}{g:04x}-7d1e-4b2a",'
                                  f'modelName="NVIDIA H100 80GB HBM3",Hostname="node{n:03d}"}}')
        state = [rnd.random() * 100 + 50 for _ in series]
        t0 = tt.T0 + 1234  # not aligned to a block
        with open(path, "w") as fh:
            for m in metrics:
                fh.write(f"# HELP {m} {m} from the simulated fleet.\n# TYPE {m} gauge\n")
            for t in range(t0, t0 + self.hours * 3600, self.step):
                out = []
                for i, s in enumerate(series):
                    if "UTIL" in s:
                        v = str(rnd.randint(0, 100))
                    elif "TEMP" in s:
                        v = str(30 + rnd.randint(0, 50))
                    elif "POWER_USAGE" in s:
                        state[i] = max(50.0, state[i] + rnd.random() * 20 - 10)
                        v = f"{state[i]:.3f}"
                    elif "CLOCK" in s:
                        v = "1980"
                    else:
                        v = str(int(8.5e10 + rnd.randint(0, 1 << 20) * 4096))
                    if rnd.random() < 0.0005:
                        v = "NaN"
                    out.append(f"{s} {v} {t}\n")
                fh.write("".join(out))
            fh.write("# EOF\n")


def run(cmd, timeout=240):
    p = subprocess.run(cmd, capture_output=True, timeout=timeout)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def run_to(cmd, path, timeout=240):
    """Runs cmd with stdout into the file path; returns (rc, "", stderr)."""
    with open(path, "wb") as out:
        p = subprocess.run(cmd, stdout=out, stderr=subprocess.PIPE, timeout=timeout)
    return p.returncode, "", p.stderr.decode("utf-8", "replace")


def table(out):
    """(mint, maxt, duration, samples, series) per row of a block table
    (minTime-sorted), without the ULID, chunk count and size."""
    rows = []
    for ln in out.splitlines():
        if not ln.strip() or ln.startswith("BLOCK ULID"):
            continue
        if "UTC" in ln:  # -r: "1970-01-01 00:00:00 +0000 UTC" is 4 words
            m = re.match(r"(\S+)\s+(\S+ \S+ \S+ UTC)\s+(\S+ \S+ \S+ UTC)\s+(\S+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\S+)$", ln)
            if not m:
                raise AssertionError(f"unparseable list line {ln!r}")
            rows.append((m.group(2), m.group(3), m.group(4), m.group(5), m.group(7)))
        else:
            c = ln.split()
            rows.append((int(c[1]), int(c[2]), c[3], int(c[4]), int(c[6])))
    return sorted(rows)


def analyze_sections(out):
    """{title: set of lines} of an analyze report, minus the block ID."""
    secs = {}
    for part in out.strip().split("\n\n"):
        lines = part.splitlines()
        if lines and lines[0].startswith("Block ID:"):
            secs["head"] = {ln for ln in lines[1:]}
        elif lines:
            secs[lines[0]] = set(lines[1:])
    return secs


def compare(f, case, src, tmp, flags):
    tag = f"{case.name}{' ' + ' '.join(flags) if flags else ''}"
    pdb, kdb = os.path.join(tmp, f"p-{case.name}-{len(flags)}"), os.path.join(tmp, f"k-{case.name}-{len(flags)}")
    for d in (pdb, kdb):
        shutil.rmtree(d, ignore_errors=True)
    prc, pout, perr = run([PROMTOOL, "tsdb", "create-blocks-from", *flags, "openmetrics", src, pdb])
    krc, kout, kerr = run([kt.KELVIN, "tsdb", "create-blocks-from", *flags, "openmetrics", src, kdb])
    if not f.check(prc == 0 and krc == 0, f"{tag}: backfill rc promtool {prc} {perr!r}, kelvin {krc} {kerr!r}"):
        return
    f.check(table(pout) == table(kout) and len(table(pout)) > 0,
            f"{tag}: backfill tables differ:\npromtool {table(pout)}\nkelvin   {table(kout)}")
    os.makedirs(os.path.join(pdb, "wal"), exist_ok=True)  # promtool 2.42 needs one to read the directory
    for extra in ([], ["-r"]):
        _, pl, pe = run([PROMTOOL, "tsdb", "list", *extra, pdb])
        _, kl, ke = run([kt.KELVIN, "tsdb", "list", *extra, kdb])
        f.check(table(pl) == table(kl) and table(pl), f"{tag}: list {extra} differs:\n{pl}\n{kl}\n{pe}{ke}")
    dumps = [[]]
    if case.name == "gpu":
        lo, hi = (tt.T0 + 5000) * 1000, (tt.T0 + 5 * 3600) * 1000
        dumps += [[f"--min-time={lo}", f"--max-time={hi}"], ['--match=DCGM_FI_DEV_GPU_TEMP{gpu=~"[0-3]"}'],
                  ["--match={Hostname=\"node007\", __name__!~'.*CLOCK'}", f"--max-time={lo}"]]
    for d in dumps:
        # Dumps go to files and are compared there: a million lines twice
        # over would cost the shared machine a gigabyte of Python strings.
        pf, kf = os.path.join(tmp, "promtool.dump"), os.path.join(tmp, "kelvin.dump")
        prc, _, pe = run_to([PROMTOOL, "tsdb", "dump", *d, pdb], pf)
        krc, _, ke = run_to([kt.KELVIN, "tsdb", "dump", *d, kdb], kf)
        if not f.check(prc == 0 and krc == 0, f"{tag}: dump {d}: rc {prc} {pe!r} / {krc} {ke!r}"):
            continue
        f.check(os.path.getsize(pf) > 0, f"{tag}: dump {d} is empty")
        if not d and not flags and isinstance(case, tt.Case):
            with open(kf, encoding="utf-8") as fh:
                f.check(fh.read().splitlines() == case.dump_lines(), f"{tag}: dump differs from the expected samples")
        if not filecmp.cmp(pf, kf, shallow=False):
            with open(pf, encoding="utf-8") as a, open(kf, encoding="utf-8") as b:
                pls, kls = a.read().splitlines(), b.read().splitlines()
            ps, ks = set(pls), set(kls)
            f.check(False, f"{tag}: dump {d} differs: promtool {len(pls)} lines, kelvin {len(kls)}; "
                           f"only promtool {sorted(ps - ks)[:3]}, only kelvin {sorted(ks - ps)[:3]}"
                           + ("; same lines, other order" if ps == ks else ""))
    if case.name == "mixed" and not flags:
        # --match as promtool parses it (2.42's parser.ParseMetricSelector):
        # the same lines, or the same error on stderr, and the same status
        for sel in MATCHES:
            prc, pout, perr = run([PROMTOOL, "tsdb", "dump", "--match", sel, pdb])
            krc, kout, kerr = run([kt.KELVIN, "tsdb", "dump", "--match", sel, kdb])
            f.check((prc, pout, perr) == (krc, kout, kerr),
                    f"{tag}: dump --match {sel!r}: promtool rc {prc} {perr!r} {pout[:300]!r}\n"
                    f"    kelvin rc {krc} {kerr!r} {kout[:300]!r}")
    prc, pa, pe = run([PROMTOOL, "tsdb", "analyze", "--limit=1000000", pdb])
    krc, ka, ke = run([kt.KELVIN, "tsdb", "analyze", "--limit=1000000", kdb])
    ps, ks = analyze_sections(pa), analyze_sections(ka)
    f.check(prc == 0 and krc == 0, f"{tag}: analyze rc {prc} {pe!r} / {krc} {ke!r}")
    for title, lines in ps.items():
        got = ks.get(title, set())
        missing = lines - got
        f.check(not missing, f"{tag}: analyze {title!r}: kelvin lacks {sorted(missing)[:5]}")
        if title != "head":
            f.check(got == lines, f"{tag}: analyze {title!r}: kelvin has more: {sorted(got - lines)[:5]}")


def main():
    f = kt.Failures()
    tmp = tempfile.mkdtemp(prefix="kelvin-tsdb-compat-")
    try:
        if not os.access(PROMTOOL, os.X_OK):
            raise AssertionError(f"{PROMTOOL} not found: run scripts/peers to fetch Prometheus 2.42's promtool")
        rc, out, _ = run([PROMTOOL, "--version"])
        f.check("version 2.42" in out, f"promtool is not 2.42: {out.splitlines()[:1]}")
        for case in tt.cases() + [GpuCase()]:
            src = os.path.join(tmp, case.name + ".om")
            if isinstance(case, tt.Case):
                with open(src, "w") as fh:
                    fh.write(case.text())
            else:
                case.write(src)
            compare(f, case, src, tmp, [])
            if case.name != "small":
                compare(f, case, src, tmp, ["--max-block-duration=6h"])
            if case.name == "mixed":
                compare(f, case, src, tmp, ["--max-block-duration=20h", "--human-readable"])
            os.remove(src)

        # overlapping blocks: the same file twice (2 h and 6 h blocks) into
        # one directory; both dumps merge them the same way
        src = os.path.join(tmp, "mixed.om")
        with open(src, "w") as fh:
            fh.write(tt.mixed_case().text())
        pdb, kdb = os.path.join(tmp, "p-overlap"), os.path.join(tmp, "k-overlap")
        for flags in ([], ["--max-block-duration=6h"]):
            prc, _, perr = run([PROMTOOL, "tsdb", "create-blocks-from", "-q", *flags, "openmetrics", src, pdb])
            krc, _, kerr = run([kt.KELVIN, "tsdb", "create-blocks-from", "-q", *flags, "openmetrics", src, kdb])
            f.check(prc == 0 and krc == 0, f"overlap backfill {flags}: {perr!r} {kerr!r}")
        os.makedirs(os.path.join(pdb, "wal"), exist_ok=True)
        prc, pd, perr = run([PROMTOOL, "tsdb", "dump", pdb])
        krc, kd, kerr = run([kt.KELVIN, "tsdb", "dump", kdb])
        f.check(prc == 0 and krc == 0 and pd == kd and pd, f"overlapping blocks: dumps differ {perr!r} {kerr!r}")

        # malformed inputs: both refuse, in the same words
        same_words = {"repeated_label": 'label name "a" is not unique: invalid sample'}
        for name, text, _ in tt.MALFORMED:
            src = os.path.join(tmp, name + ".om")
            with open(src, "w") as fh:
                fh.write(text)
            prc, _, perr = run([PROMTOOL, "tsdb", "create-blocks-from", "openmetrics", src, os.path.join(tmp, "pm")])
            krc, _, kerr = run([kt.KELVIN, "tsdb", "create-blocks-from", "openmetrics", src, os.path.join(tmp, "km")])
            f.check(prc != 0 and krc != 0, f"{name}: rc promtool {prc}, kelvin {krc}")
            want = same_words.get(name, perr.strip())
            f.check(want and (kerr.startswith(want) if name not in same_words else want in kerr),
                    f"{name}: promtool says {perr.strip()!r}, kelvin {kerr.strip()!r}")
            f.check(not os.path.exists(os.path.join(tmp, "km")), f"{name}: kelvin left an output directory")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        f.finish("tsdb_backfill")


if __name__ == "__main__":
    main()
