"""Reads one conformance client run's results: `conformance_checks.py OUT SCENARIO [expected]`.

The suite writes OUT/SCENARIO-TIMESTAMP/checks.json when the scenario ran. This fails unless it
is there and holds a SUCCESS (a run whose client never connected can pass with no checks at all),
and, unless `expected` (a scenario listed as an expected failure), holds no FAILURE or WARNING.
"""

import glob
import json
import sys


def main():
    out, scenario = sys.argv[1], sys.argv[2]
    expected = len(sys.argv) > 3 and sys.argv[3] == "expected"
    found = glob.glob(f"{out}/{scenario}-*/checks.json")
    if len(found) != 1:
        sys.exit(f"{scenario}: did not run (no {out}/{scenario}-*/checks.json)")
    with open(found[0]) as f:
        checks = json.load(f)
    statuses = [c["status"] for c in checks]
    bad = [f"{c['id']}: {c['status']}: {c.get('errorMessage') or c.get('description')}"
           for c in checks if c["status"] in ("FAILURE", "WARNING")]
    if "SUCCESS" not in statuses:
        sys.exit(f"{scenario}: no check succeeded: {statuses}")
    if expected:
        if not bad:
            sys.exit(f"{scenario}: listed as an expected failure but passed: remove it from the list")
        print(f"{scenario}: fails as expected ({len(bad)} checks)")
        return
    if bad:
        sys.exit(f"{scenario}:\n  " + "\n  ".join(bad))
    print(f"{scenario}: {statuses.count('SUCCESS')} checks passed, 0 failed, 0 warnings")


main()
