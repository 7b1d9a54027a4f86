#!/usr/bin/python3
"""`kelvin tsdb` end to end: create-blocks-from openmetrics, dump, dump-openmetrics, analyze, list.

Small OpenMetrics files are generated here with what each should give back
(special values NaN, +Inf, -Inf, -0.0, the smallest subnormal, the largest
double; label escapes and Unicode; an empty label value, which is dropped;
a series with 60 labels; float-second timestamps; an exemplar; several
blocks' worth of time; duplicate and out-of-order samples, dropped as
promtool drops them). Each is backfilled, and then:
- dump prints every expected sample exactly once, in promtool's format
  (labels as Go's labels.String(), values as Go's %g), series sorted by
  labels and samples by time; --min-time/--max-time/--match filter;
- dump-openmetrics writes OpenMetrics that backfills back to the same
  samples (special values, label escapes, millisecond timestamps);
- the same file backfilled with --max-samples-in-memory=7 (many passes)
  dumps the same;
- list shows one block per 2 h range with samples, with the range
  [first sample, last + 1) and the sample and series counts expected;
- analyze reports the newest block by default and a given one on demand,
  its counts, bytes per sample and the top lists, bounded by --limit;
- malformed inputs (no # EOF, a missing timestamp, a bad value, a truncated
  file, a repeated label name, an unknown format) fail with a clear message
  naming the line, exit non-zero, and leave no block behind (a fresh output
  directory is not even created; an existing one is left as it was);
- a block with a damaged index is skipped by dump with a report and exit 1
  while the other blocks are still dumped; a damaged chunk cuts its series
  short with a report and exit 1.

The compat test tests/compat/tsdb_backfill.py imports the cases from here
and compares with the real promtool.
"""
import decimal
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import kelvintest as kt  # noqa: E402

T0 = 1700000000  # seconds, as OpenMetrics timestamps are
BLOCK_MS = 2 * 3600 * 1000


# ---- Go's formatting, to know the expected text -------------------------------

def go_g(v):
    """fmt.Sprintf("%g", v) for a float64."""
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    if v == 0:
        return "-0" if math.copysign(1.0, v) < 0 else "0"
    sign, digits, exp = decimal.Decimal(repr(v)).as_tuple()
    digits = list(digits)
    while len(digits) > 1 and digits[-1] == 0:
        digits.pop()
        exp += 1
    ds = "".join(map(str, digits))
    x = len(ds) + exp - 1  # decimal exponent of the first digit
    s = "-" if sign else ""
    if x < -4 or x >= 6:  # shortest 'g' decides with precision 6
        m = ds[0] + ("." + ds[1:] if len(ds) > 1 else "")
        return f"{s}{m}e{'-' if x < 0 else '+'}{abs(x):02d}"
    if x < 0:
        return s + "0." + "0" * (-x - 1) + ds
    if x + 1 >= len(ds):
        return s + ds + "0" * (x + 1 - len(ds))
    return s + ds[:x + 1] + "." + ds[x + 1:]


def go_quote(s):
    """strconv.Quote for the strings used here (printable, \\n, \\t)."""
    out = ['"']
    for ch in s:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch.isprintable():
            out.append(ch)
        else:
            out.append("\\x%02x" % ord(ch) if ord(ch) < 0x80 else "\\u%04x" % ord(ch))
    out.append('"')
    return "".join(out)


def om_escape(s):
    return s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


# ---- cases --------------------------------------------------------------------

class Case:
    """An OpenMetrics file and what backfilling it gives.

    rows: (name, [(label, value)...] in file order, value text, timestamp
    text, exemplar text or None), in file order."""

    def __init__(self, name, rows, head=""):
        self.name = name
        self.rows = rows
        self.head = head

    def text(self):
        lines = [self.head] if self.head else []
        for name, labels, vt, ts, ex in self.rows:
            lb = ""
            if labels:
                lb = "{" + ",".join(f'{k}="{om_escape(v)}"' for k, v in labels) + "}"
            lines.append(f"{name}{lb} {vt} {ts}" + (f" # {ex}" if ex else ""))
        return "\n".join(lines) + "\n# EOF\n"

    def kept(self):
        """{series key: [(t, v)]} after promtool's per-series, per-range rule:
        a sample is kept only if its timestamp is after the last one kept."""
        last, out = {}, {}
        for name, labels, vt, ts, _ in self.rows:
            key = tuple(sorted([("__name__", name)] + [(k, v) for k, v in labels if v != ""]))
            t = int(float(ts) * 1000)  # Go: int64(f * 1000)
            k = t // BLOCK_MS
            if (key, k) in last and t <= last[(key, k)]:
                continue
            last[(key, k)] = t
            out.setdefault(key, []).append((t, float(vt)))
        return {k: sorted(v) for k, v in out.items()}

    def dump_lines(self, mint=None, maxt=None, keep=lambda key: True):
        lines, kept = [], self.kept()
        for key in sorted(kept, key=lambda k: [(a.encode(), b.encode()) for a, b in k]):
            if not keep(key):
                continue
            ls = "{" + ", ".join(f"{a}={go_quote(b)}" for a, b in key) + "}"
            for t, v in kept[key]:
                if (mint is None or t >= mint) and (maxt is None or t <= maxt):
                    lines.append(f"{ls} {go_g(v)} {t}")
        return lines

    def blocks(self):
        """[(mint, maxt, samples, series)] per 2 h range with samples."""
        per = {}
        for key, ss in self.kept().items():
            for t, _ in ss:
                b = per.setdefault(t // BLOCK_MS, [None, None, 0, set()])
                b[0] = t if b[0] is None else min(b[0], t)
                b[1] = t if b[1] is None else max(b[1], t)
                b[2] += 1
                b[3].add(key)
        return [(b[0], b[1] + 1, b[2], len(b[3])) for _, b in sorted(per.items())]


SPECIAL = [("nan", "NaN"), ("pinf", "+Inf"), ("ninf", "-Inf"), ("negzero", "-0.0"), ("subnormal", "5e-324"),
           ("max", "1.7976931348623157e+308"), ("tenth", "0.1"), ("int", "123456789"), ("neg", "-42.5"),
           ("small", "1e-05"), ("e21", "1e21"), ("hundredk", "100000")]


def mixed_case():
    rows = []
    for i, off in enumerate(range(0, 7 * 3600, 600)):  # 42 points over 7 h: 4 or 5 blocks
        ts = T0 + off
        for kind, vt in SPECIAL:
            rows.append(("special", [("kind", kind)], vt, str(ts), None))
        rows.append(("esc_metric", [("v", 'a\\b"c\nd'), ("u", "ü日本 x"), ("empty", "")], str(i), f"{ts}.123", None))
        rows.append(("many_labels", [(f"l{j:02d}", f"value-{j}") for j in range(60)], go_g(i * 1.5), str(ts), None))
        rows.append(("gpu_util", [("gpu", str(i % 4)), ("Hostname", "node1")], str(i), str(ts), None))
        rows.append(("req_total", [("code", "200")], str(i * 10), str(ts),
                     f'{{trace_id="t{i}"}} 1 {ts}' if i % 7 == 0 else None))
    # Duplicates and out-of-order samples, in file order.
    rows += [("dups", [], "1", str(T0 + 10), None), ("dups", [], "1", str(T0 + 10), None),
             ("dups", [], "2", str(T0 + 10), None), ("dups", [], "3", str(T0 + 5), None),
             ("dups", [], "4", str(T0 + 20), None), ("dups", [], "5", str(T0 + 7300), None),
             ("dups", [], "6", str(T0 + 15), None)]
    head = "# HELP special Special values.\n# TYPE special gauge\n# TYPE req counter\n# HELP req Requests."
    return Case("mixed", rows, head)


def small_case():
    rows = [("up", [("job", "a")], "1", "10", None), ("up", [("job", "b")], "0", "10.5", None),
            ("up", [("job", "a")], "1", "20", None)]
    return Case("small", rows)


def cases():
    return [mixed_case(), small_case()]


# (name, text, words the error must contain)
MALFORMED = [
    ("no_eof", "up 1 10\nup 2 20\n", ["data does not end with # EOF"]),
    ("no_timestamp", "up 1 10\nup 2\n# EOF\n", ["expected timestamp for series got none", "line 2"]),
    ("bad_value", "up 1 10\nup 1x 20\n# EOF\n", ['strconv.ParseFloat: parsing "1x": invalid syntax', "line 2"]),
    ("truncated", 'up 1 10\nup{job="a', ["line 2"]),
    ("repeated_label", 'up{a="1",a="2"} 1 10\n# EOF\n', ['label name "a" is not unique', "line 1"]),
    ("text_format", "# TYPE up gauge\nup 1 10\n\nup 2 20\n# EOF\n", ["line 3"]),
]


# ---- running kelvin -------------------------------------------------------------

def run(*args, timeout=120):
    p = subprocess.run([kt.KELVIN, "tsdb", *args], capture_output=True, timeout=timeout)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def backfill(path, out, *flags):
    return run("create-blocks-from", *flags, "openmetrics", path, out)


def list_blocks(db):
    """[(ulid, mint, maxt, samples, series)] from `kelvin tsdb list`."""
    rc, out, err = run("list", db)
    if rc != 0:
        raise AssertionError(f"list {db}: rc {rc}: {err}")
    lines = out.splitlines()
    if not lines or not lines[0].startswith("BLOCK ULID"):
        raise AssertionError(f"list {db}: no header: {out!r}")
    rows = []
    for ln in lines[1:]:
        c = ln.split()
        rows.append((c[0], int(c[1]), int(c[2]), int(c[4]), int(c[6])))
    return rows


def main():
    f = kt.Failures()
    tmp = tempfile.mkdtemp(prefix="kelvin-tsdb-tools-")
    try:
        for case in cases():
            src = os.path.join(tmp, case.name + ".om")
            with open(src, "w") as fh:
                fh.write(case.text())
            db = os.path.join(tmp, case.name + "-db")
            rc, out, err = backfill(src, db)
            f.check(rc == 0, f"{case.name}: backfill rc {rc}: {err}")
            want_blocks = case.blocks()
            printed = [ln for ln in out.splitlines() if ln and not ln.startswith("BLOCK ULID")]
            f.check(out.startswith("BLOCK ULID") and len(printed) == len(want_blocks),
                    f"{case.name}: backfill printed {out!r}, want a header and {len(want_blocks)} blocks")
            dups = sum(1 for r in case.rows if r[0] == "dups")
            if dups:
                f.check("dropped 4 of" in err and "2 out of order, 1 duplicates, 1 duplicate timestamps" in err,
                        f"{case.name}: expected a report of 4 dropped samples, stderr {err!r}")
            got = list_blocks(db)
            f.check([g[1:] for g in got] == want_blocks, f"{case.name}: blocks {got} != {want_blocks}")
            for g in got:
                f.check(os.path.isfile(os.path.join(db, g[0], "meta.json")), f"{case.name}: {g[0]} has no meta.json")
            f.check(not [e for e in os.listdir(db) if e.endswith(".tmp")], f"{case.name}: .tmp left in {db}")

            # dump: every sample exactly once, in order and format.
            rc, out, err = run("dump", db)
            want = case.dump_lines()
            lines = out.splitlines()
            f.check(rc == 0 and err == "", f"{case.name}: dump rc {rc}: {err}")
            f.check(len(lines) == len(set(lines)), f"{case.name}: dump has repeated lines")
            if lines != want:
                missing = sorted(set(want) - set(lines))[:5]
                extra = sorted(set(lines) - set(want))[:5]
                f.check(False, f"{case.name}: dump differs ({len(lines)} lines, want {len(want)}); "
                               f"missing {missing}, unexpected {extra}")

            # many passes over the input: the same samples.
            db2 = os.path.join(tmp, case.name + "-db2")
            rc, out, err = backfill(src, db2, "--max-samples-in-memory=7", "-q")
            f.check(rc == 0 and out == "", f"{case.name}: quiet backfill rc {rc} printed {out!r}: {err}")
            rc, out2, _ = run("dump", db2)
            f.check(out2.splitlines() == want, f"{case.name}: dump after a many-pass backfill differs")
            f.check([g[1:] for g in list_blocks(db2)] == want_blocks, f"{case.name}: many-pass blocks differ")

        case = mixed_case()
        db = os.path.join(tmp, "mixed-db")

        # the same file backfilled twice into one directory: overlapping
        # blocks, merged by dump, every sample still exactly once
        twice = os.path.join(tmp, "twice-db")
        for flags in ([], ["--max-block-duration=6h"]):
            rc, out, err = backfill(os.path.join(tmp, "mixed.om"), twice, "-q", *flags)
            f.check(rc == 0, f"backfill into twice-db {flags}: {err}")
        rc, out, err = run("dump", twice)
        f.check(rc == 0 and out.splitlines() == case.dump_lines(), "dump of overlapping blocks differs")

        # dump-openmetrics: what create-blocks-from reads back, to the bit
        # (special values, label escapes, ms timestamps)
        rc, om, err = run("dump-openmetrics", db)
        f.check(rc == 0 and om.endswith("# EOF\n") and "\n# TYPE" not in om, f"dump-openmetrics rc {rc}: {err}")
        rt_src = os.path.join(tmp, "roundtrip.om")
        with open(rt_src, "w") as fh:
            fh.write(om)
        rt = os.path.join(tmp, "roundtrip-db")
        rc, out, err = backfill(rt_src, rt, "-q")
        f.check(rc == 0, f"backfill of dump-openmetrics: rc {rc}: {err}")
        rc, out, err = run("dump", rt)
        f.check(rc == 0 and out.splitlines() == case.dump_lines(), "dump-openmetrics does not round-trip")
        rc, om2, err = run("dump-openmetrics", '--match=special{kind="pinf"}', db)
        f.check(rc == 0 and om2.splitlines()[0] == f'special{{kind="pinf"}} +Inf {T0}' and
                len(om2.splitlines()) == 43, f"dump-openmetrics --match: {om2[:200]!r} {err}")

        # dump filters
        lo, hi = (T0 + 3600) * 1000, (T0 + 3 * 3600) * 1000
        rc, out, err = run("dump", f"--min-time={lo}", "--max-time", str(hi), db)
        f.check(rc == 0 and out.splitlines() == case.dump_lines(lo, hi), f"dump --min-time/--max-time: {err}")
        rc, out, err = run("dump", '--match=special{kind=~"n.*",kind!="neg"}', db)
        want = case.dump_lines(keep=lambda k: dict(k).get("__name__") == "special"
                               and re.fullmatch("n.*", dict(k)["kind"]) and dict(k)["kind"] != "neg")
        f.check(rc == 0 and out.splitlines() == want and len(want) > 0, f"dump --match: rc {rc} {err}")
        rc, out, err = run("dump", "--match", "{u=`ü日本 x`}", db)
        f.check(rc == 0 and out.splitlines() == case.dump_lines(keep=lambda k: dict(k).get("u") == "ü日本 x"),
                f"dump --match with a raw string: {err}")
        rc, out, err = run("dump", "--match={}", db)
        f.check(rc == 0 and out == "", f"dump --match={{}} selects nothing (as promtool): {out[:200]!r}")
        rc, out, err = run("dump", '--match={kind=~"("}', db)
        f.check(rc == 1 and "parse error: error parsing regexp: missing closing )" in err, f"bad regex: {err!r}")
        rc, out, err = run("dump", '--match={kind="a', db)
        f.check(rc == 1 and "1:7: parse error: unterminated quoted string" in err, f"bad selector: {err!r}")

        # list and analyze
        blocks = list_blocks(db)
        newest = max(blocks, key=lambda b: b[1])
        rc, out, err = run("analyze", db)
        f.check(rc == 0, f"analyze rc {rc}: {err}")
        f.check(f"Block ID: {newest[0]}\n" in out, f"analyze did not pick the newest block {newest[0]}: {out[:300]}")
        f.check(f"\nSeries: {newest[4]}\n" in out and f"\nSamples: {newest[3]}\n" in out,
                f"analyze counts: want series {newest[4]} samples {newest[3]}: {out[:600]}")
        m = re.search(r"Bytes per sample \(index included\): ([0-9.]+)\n", out)
        m2 = re.search(r"Bytes per sample \(chunks only\): ([0-9.]+)\n", out)
        f.check(m and m2 and float(m.group(1)) > float(m2.group(1)) > 0, "analyze bytes per sample")
        for sec in ["Label pairs most involved in churning:", "Label names most involved in churning:",
                    "Most common label pairs:", "Label names with highest cumulative label value length:",
                    "Highest cardinality labels:", "Highest cardinality metric names:", "Chunk encodings:"]:
            f.check("\n" + sec + "\n" in out, f"analyze lacks {sec!r}")
        first = blocks[0]
        rc, out, err = run("analyze", "--limit=3", "--extended", db, first[0])
        f.check(rc == 0 and f"Block ID: {first[0]}\n" in out, f"analyze of a given block: {err}")
        sections = out.split("\n\n")
        for s in sections[1:7]:
            f.check(len(s.strip().splitlines()) <= 4, f"--limit=3 not applied: {s!r}")
        top = re.search(r"Highest cardinality labels:\n(\d+) (\S+)\n", out)
        f.check(top and top.group(2) == "kind" and int(top.group(1)) == 12,
                f"highest cardinality label should be kind with 12 values: {top and top.groups()}")
        f.check("Compaction analysis:" in out and "100%: " in out, "--extended fullness histogram")
        rc, out, err = run("analyze", db, "01ARZ3NDEKTSV4RRFFQ69G5FAV")
        f.check(rc == 1 and "block 01ARZ3NDEKTSV4RRFFQ69G5FAV not found" in err, f"analyze unknown block: {err}")
        rc, out, err = run("list", "-r", db)
        f.check(rc == 0 and "+0000 UTC" in out and "B\n" in out, f"list -r: {out[:300]}")

        # malformed inputs: clear errors, nothing left behind
        existing = os.path.join(tmp, "mixed-db")
        before = sorted(os.listdir(existing))
        for name, text, words in MALFORMED:
            src = os.path.join(tmp, name + ".om")
            with open(src, "w") as fh:
                fh.write(text)
            fresh = os.path.join(tmp, name + "-out", "sub")
            rc, out, err = backfill(src, fresh)
            f.check(rc != 0, f"{name}: accepted")
            f.check(all(w in err for w in words), f"{name}: error {err!r} lacks {words}")
            f.check(not os.path.exists(os.path.join(tmp, name + "-out")), f"{name}: output dir created")
            rc, out, err = backfill(src, existing)
            f.check(rc != 0 and sorted(os.listdir(existing)) == before, f"{name}: existing dir changed")
        rc, out, err = run("create-blocks-from", "csv", os.path.join(tmp, "small.om"), os.path.join(tmp, "x"))
        f.check(rc == 2 and "openmetrics" in err, f"unknown input format: rc {rc} {err!r}")
        rc, out, err = backfill(os.path.join(tmp, "nonexistent.om"), os.path.join(tmp, "x"))
        f.check(rc == 1 and "nonexistent.om" in err, f"missing input: {err!r}")
        for sub in ["create-blocks-from", "dump", "analyze", "list"]:
            rc, out, err = run(sub, "--help")
            f.check(rc == 0 and out.startswith("usage: kelvin tsdb " + sub), f"{sub} --help: {rc} {out[:80]!r}")

        # damaged blocks
        bad = os.path.join(tmp, "damaged-db")
        shutil.copytree(db, bad)
        victim = blocks[1][0]
        with open(os.path.join(bad, victim, "index"), "r+b") as fh:
            fh.seek(40)
            b = fh.read(1)
            fh.seek(40)
            fh.write(bytes([b[0] ^ 0xff]))
        rc, out, err = run("dump", bad)
        f.check(rc == 1 and "skipping damaged block" in err and victim in err, f"damaged index: rc {rc}: {err!r}")
        vmin, vmax = blocks[1][1], blocks[1][2]
        want = [ln for ln in case.dump_lines() if not vmin <= int(ln.rsplit(" ", 1)[1]) < vmax]
        f.check(out.splitlines() == want, "dump with a damaged block: the other blocks' samples differ")
        rc, out, err = run("list", bad)
        f.check(rc == 1 and len(out.splitlines()) == len(blocks), f"list with a damaged block: rc {rc}")

        bad2 = os.path.join(tmp, "damaged-chunk-db")
        shutil.copytree(db, bad2)
        victim = blocks[0][0]
        with open(os.path.join(bad2, victim, "chunks", "000001"), "r+b") as fh:
            fh.seek(12)
            b = fh.read(1)
            fh.seek(12)
            fh.write(bytes([b[0] ^ 0x55]))
        rc, out, err = run("dump", bad2)
        got, full = out.splitlines(), case.dump_lines()
        f.check(rc == 1 and "damaged chunk" in err, f"damaged chunk: rc {rc}: {err!r}")
        f.check(set(got) <= set(full) and 0 < len(full) - len(got) <= 120,
                f"damaged chunk: {len(full) - len(got)} samples lost, want 1..120 and the rest intact")
        others = [ln for ln in full if not blocks[0][1] <= int(ln.rsplit(" ", 1)[1]) < blocks[0][2]]
        f.check(set(others) <= set(got), "damaged chunk: samples of other blocks missing")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        f.finish("tsdb_tools")


if __name__ == "__main__":
    main()
