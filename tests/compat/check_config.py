#!/usr/bin/python3
"""check_config.py -- `kelvin check config` against promtool 2.42's `check config`.

For every file under tests/fixtures/configs/{good,bad}/*.yml, runs
$KELVIN_PEERS/bin/promtool check config FILE and $KELVIN_BIN check config
FILE and asserts:
  - the same verdict (exit status 0, or non-zero) from both programs, except
    for files marked `# known-difference: why`, where promtool must accept
    and Kelvin must refuse (the difference is asserted, not skipped);
  - every good/ file passes and every bad/ file fails in Kelvin;
  - a bad/ file's first line `# error: TEXT` appears in Kelvin's stderr
    (the message uses Prometheus's words).
Prints a per-file table; exits 1 on any mismatch.
"""
import glob
import os
import sys


sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import kelvintest as kt  # noqa: E402
from kelvintest import fixture_marker as marker, run_capture as run  # noqa: E402


def main():
    found = kt.kelvin_and_promtool("check_config")
    if not found:
        return 1
    src, kelvin, promtool = found
    base = os.path.join(src, "tests", "fixtures", "configs")
    files = [("good", f) for f in sorted(glob.glob(os.path.join(base, "good", "*.yml")))]
    files += [("bad", f) for f in sorted(glob.glob(os.path.join(base, "bad", "*.yml")))]
    if len(files) < 20:
        print("check_config: only %d fixture files found under %s" % (len(files), base), file=sys.stderr)
        return 1
    failures = []
    print("%-4s %-40s %8s %8s  %s" % ("kind", "file", "promtool", "kelvin", "result"))
    for kind, path in files:
        name = os.path.relpath(path, base)
        prc, _, perr = run([promtool, "check", "config", path])
        krc, kout, kerr = run([kelvin, "check", "config", path])
        known = marker(path, "known-difference")
        want_err = marker(path, "error")
        problems = []
        if krc not in (0, 1):
            problems.append("kelvin exit status %d (crash or usage error): %s" % (krc, kerr.strip()[-300:]))
        if kind == "good" and krc != 0:
            problems.append("kelvin refused a good file: %s" % kerr.strip())
        if kind == "bad" and krc == 0:
            problems.append("kelvin accepted a bad file")
        if known:
            if prc != 0 or krc == 0:
                problems.append("known difference (%s) no longer holds: promtool %d, kelvin %d" % (known, prc, krc))
        elif (prc == 0) != (krc == 0):
            problems.append("verdicts differ: promtool %d (%s), kelvin %d (%s)" % (prc, perr.strip()[-200:], krc,
                                                                                  kerr.strip()[-200:]))
        if kind == "bad" and not want_err:
            problems.append("bad file without a '# error:' line")
        if kind == "bad" and want_err and want_err not in kerr:
            problems.append("kelvin's message lacks %r: %s" % (want_err, kerr.strip()))
        if kind == "good" and "Checking " + path not in kout:
            problems.append("no 'Checking FILE' line on stdout")
        result = "ok" if not problems else "FAIL"
        if known and not problems:
            result = "ok (known difference)"
        print("%-4s %-40s %8d %8d  %s" % (kind, name, prc, krc, result))
        for p in problems:
            failures.append("%s: %s" % (name, p))
    return kt.report_agreement(failures, len(files))


if __name__ == "__main__":
    sys.exit(main())
