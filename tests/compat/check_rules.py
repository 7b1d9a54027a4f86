#!/usr/bin/python3
"""check_rules.py -- `kelvin check rules` against promtool 2.42's `check rules`.

For every file under tests/fixtures/rules/{good,bad}/*.yml, runs
$KELVIN_PEERS/bin/promtool check rules FILE and $KELVIN_BIN check rules
FILE and asserts:
  - the same verdict (exit status) from both programs, except for files
    marked `# known-difference: why`, where promtool must refuse and Kelvin
    must accept (template syntax, which Kelvin does not check yet): the
    difference is asserted, not skipped, and promtool's stderr must carry
    the file's `# error:` text;
  - every good/ file passes and every bad/ file fails in Kelvin;
  - a bad/ file's `# error: TEXT` line (within its first five lines)
    appears in Kelvin's stderr (the message uses Prometheus's words);
  - the same stdout and stderr, byte for byte (file names, positions,
    "  SUCCESS: N rules found", lint findings).
Then runs both over all good files at once, all bad files at once and the
good files with --lint-fatal (duplicate rules: exit 3) and compares exit
status and output the same way. Prints a per-file table; exits 1 on any
mismatch.
"""
import glob
import os
import sys


sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import kelvintest as kt  # noqa: E402
from kelvintest import fixture_marker as marker, run_capture as run  # noqa: E402


def main():
    found = kt.kelvin_and_promtool("check_rules")
    if not found:
        return 1
    src, kelvin, promtool = found
    base = os.path.join(src, "tests", "fixtures", "rules")
    # relative names, run from base: both programs print the name they are given
    files = [("good", os.path.relpath(f, base)) for f in sorted(glob.glob(os.path.join(base, "good", "*.yml")))]
    files += [("bad", os.path.relpath(f, base)) for f in sorted(glob.glob(os.path.join(base, "bad", "*.yml")))]
    if sum(1 for k, _ in files if k == "good") < 10 or sum(1 for k, _ in files if k == "bad") < 10:
        print("check_rules: too few fixture files under %s" % base, file=sys.stderr)
        return 1
    failures = []
    print("%-4s %-40s %8s %8s  %s" % ("kind", "file", "promtool", "kelvin", "result"))
    for kind, name in files:
        path = os.path.join(base, name)
        prc, pout, perr = run([promtool, "check", "rules", name], base)
        krc, kout, kerr = run([kelvin, "check", "rules", name], base)
        known = marker(path, "known-difference")
        want_err = marker(path, "error")
        problems = []
        if krc not in (0, 1, 3):
            problems.append("kelvin exit status %d (crash or usage error): %s" % (krc, kerr.strip()[-300:]))
        if known:
            if kind != "bad" or prc == 0 or krc != 0:
                problems.append("known difference (%s) no longer holds: promtool %d, kelvin %d" % (known, prc, krc))
            if want_err and want_err not in perr:
                problems.append("promtool's message lacks %r: %s" % (want_err, perr.strip()))
        else:
            if kind == "good" and krc != 0:
                problems.append("kelvin refused a good file: %s" % kerr.strip())
            if kind == "bad" and krc == 0:
                problems.append("kelvin accepted a bad file")
            if prc != krc:
                problems.append("exit status differs: promtool %d (%s), kelvin %d (%s)" % (
                    prc, perr.strip()[-200:], krc, kerr.strip()[-200:]))
            if kind == "bad" and want_err and want_err not in kerr:
                problems.append("kelvin's message lacks %r: %s" % (want_err, kerr.strip()))
            if pout != kout:
                problems.append("stdout differs:\n--- promtool\n%s--- kelvin\n%s" % (pout, kout))
            if perr != kerr:
                problems.append("stderr differs:\n--- promtool\n%s--- kelvin\n%s" % (perr, kerr))
        if kind == "bad" and not want_err:
            problems.append("bad file without a '# error:' line")
        if "Checking " + name not in kout:
            problems.append("no 'Checking FILE' line on stdout")
        result = "ok" if not problems else "FAIL"
        if known and not problems:
            result = "ok (known difference)"
        print("%-4s %-40s %8d %8d  %s" % (kind, name, prc, krc, result))
        for p in problems:
            failures.append("%s: %s" % (name, p))
    good = [n for k, n in files if k == "good"]
    bad = [n for k, n in files if k == "bad" and not marker(os.path.join(base, n), "known-difference")]
    for label, args in (("all good files", good), ("all bad files", bad), ("good files, --lint-fatal",
                                                                          ["--lint-fatal"] + good)):
        prc, pout, perr = run([promtool, "check", "rules"] + args, base)
        krc, kout, kerr = run([kelvin, "check", "rules"] + args, base)
        ok = prc == krc and pout == kout and perr == kerr
        print("%-45s %8d %8d  %s" % (label, prc, krc, "ok" if ok else "FAIL"))
        if not ok:
            failures.append("%s: promtool %d, kelvin %d; outputs %s" % (
                label, prc, krc, "equal" if pout == kout and perr == kerr else "differ"))
    return kt.report_agreement(failures, len(files))


if __name__ == "__main__":
    sys.exit(main())
