#!/usr/bin/env python3
"""Sums the Surefire and Failsafe reports of every module and fails when something did not run.

Fails if no test ran at all, if any test failed, or if a test class ran nothing but skips (a
whole suite skipped is never a pass). Prints every skipped test with its reason, and ends with
the line 'N passed, N failed, N skipped', with every failed test (module, class, test, and the first
lines of what it reported) just above it, so that a CI log cut to its end still names them."""
import glob
import sys
import xml.etree.ElementTree as ET

passed = failed = skipped = 0
suites_all_skipped = []
skips = []
failures = []
# every module, nested ones (examples/...) included
reports = glob.glob("**/target/surefire-reports/TEST-*.xml", recursive=True) + glob.glob("**/target/failsafe-reports/TEST-*.xml", recursive=True)
for path in sorted(reports):
    root = ET.parse(path).getroot()
    cases = root.findall("testcase")
    s_run = s_skip = 0
    for case in cases:
        s_run += 1
        bad = case.find("failure")
        if bad is None:
            bad = case.find("error")
        if bad is not None:
            failed += 1
            said = ((bad.get("message") or "") + "\n" + (bad.text or "")).strip().splitlines()[0:6]
            failures.append("FAILED: %s %s.%s\n    %s" % (path.split("/target/")[0], case.get("classname"), case.get("name"),
                                                     "\n    ".join(line[0:300] for line in said) or "(no message)"))
        elif case.find("skipped") is not None:
            s_skip += 1
            skipped += 1
            node = case.find("skipped")
            reason = (node.get("message") or node.text or "").strip().splitlines()[0:1]
            skips.append("%s %s: %s" % (path.split("/target/")[0], case.get("name"), reason[0] if reason else "(no reason)"))
        else:
            passed += 1
    if s_run > 0 and s_run == s_skip:
        suites_all_skipped.append(path)

for s in skips:
    print("skipped: " + s)
problems = []
if passed + failed == 0:
    problems.append("no test ran")
if suites_all_skipped:
    problems.append("suites that skipped every test: " + ", ".join(suites_all_skipped))
for f in failures:
    print(f)
for p in problems:
    print("error: " + p, file=sys.stderr)
print("%d passed, %d failed, %d skipped" % (passed, failed, skipped))
sys.exit(1 if problems or failed else 0)
