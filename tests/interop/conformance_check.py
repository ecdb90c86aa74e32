"""Judge one MCP conformance run (its -o directory) for tests/interop/run.sh.

    python3 conformance_check.py --results DIR --expected FILE.yml --requirements REQ.yml \
        --exit-code N [--require SCENARIO ...] [--require-check SCENARIO:CHECK ...] \
        [--counts FILE] --label REV

The suite's own --expected-failures evaluation (its exit code, passed as
--exit-code) covers only the scenarios the requirement set SCORES. This script
repeats that judgement per check, and also holds the --require'd scenarios to
it even when they are not scored (http-header-validation at 2026-07-28 and
server-session-lifecycle at 2025-11-25 are "pending"/"added-after-release" in
the suite, but sezzlee must pass them): each must have run, and none of its
checks may fail (FAILURE or WARNING) unless the expected-failures file lists it.
--require-check'd checks must be SUCCESS.

Prints one verdict line (and one line per problem); writes "PASSED FAILED"
(checks, expected failures not counted) to --counts; exits 1 on any problem.
"""

import argparse
import json
import pathlib
import re
import sys

FAILING = ("FAILURE", "WARNING")
RANK = {"FAILURE": 4, "WARNING": 3, "SUCCESS": 2, "INFO": 1, "SKIPPED": 0}


def scored_server_scenarios(requirements):
    """The `server:` list of a requirements YAML (scored scenarios)."""
    scored, section = set(), None
    for line in pathlib.Path(requirements).read_text().splitlines():
        if re.match(r"^[A-Za-z_]", line):
            section = line.split(":")[0]
        elif section == "server":
            match = re.match(r"^\s+-\s+([^\s#]+)", line)
            if match:
                scored.add(match.group(1))
    return scored


def expected_entries(path):
    """`scenario:check` (or bare `scenario`) entries of an --expected-failures file."""
    entries = set()
    for line in pathlib.Path(path).read_text().splitlines():
        match = re.match(r"^\s+-\s+([^\s#]+)", line)
        if match:
            entries.add(match.group(1))
    return entries


def results(directory):
    """scenario -> {check id -> worst status} for every checks.json under directory."""
    found = {}
    for path in sorted(pathlib.Path(directory).glob("server-*/checks.json")):
        scenario = re.sub(r"^server-|-\d{4}-\d\d-\d\dT[\d-]+Z$", "", path.parent.name)
        checks = found.setdefault(scenario, {})
        for check in json.loads(path.read_text()):
            status, previous = check["status"], checks.get(check["id"], ("SKIPPED", ""))
            if RANK.get(status, 0) >= RANK.get(previous[0], 0):
                message = (check.get("errorMessage") or "").strip().splitlines()
                checks[check["id"]] = (status, message[0][:200] if message else "")
    return found


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--results", required=True)
    parser.add_argument("--expected", required=True)
    parser.add_argument("--requirements", required=True)
    parser.add_argument("--exit-code", type=int, required=True)
    parser.add_argument("--require", nargs="*", default=[])
    parser.add_argument("--require-check", nargs="*", default=[])
    parser.add_argument("--counts")
    parser.add_argument("--label", default="conformance")
    args = parser.parse_args()

    scored = scored_server_scenarios(args.requirements)
    expected = expected_entries(args.expected)
    found = results(args.results)
    judged = scored | set(args.require)
    problems, passed, expected_seen = [], 0, 0

    for scenario in sorted(set(args.require) - set(found)):
        problems.append(f"{scenario}: required scenario did not run")
    for scenario in sorted(judged & set(found)):
        for check, (status, message) in sorted(found[scenario].items()):
            entry = f"{scenario}:{check}"
            listed = entry in expected or scenario in expected
            if status in FAILING and listed:
                expected_seen += 1
            elif status in FAILING:
                problems.append(f"{entry} {status} (not an expected failure): {message}")
            elif status == "SUCCESS" and entry in expected:
                problems.append(f"{entry} now passes: remove it from {args.expected}")
            elif status == "SUCCESS":
                passed += 1
    for entry in args.require_check:
        scenario, _, check = entry.partition(":")
        status = found.get(scenario, {}).get(check, ("absent", ""))[0]
        if status != "SUCCESS":
            problems.append(f"{entry} must pass, was {status}")
    if args.exit_code != 0 and not problems:
        problems.append(f"the suite exited {args.exit_code} (see its log)")

    ignored = sorted(set(found) - judged)
    verdict = "ok" if not problems else "FAILED"
    print(
        f"conformance {args.label}: {verdict}: {passed} checks passed, {expected_seen} expected "
        f"failures, {len(problems)} problems ({len(judged & set(found))} scenarios judged, "
        f"{len(ignored)} not scored and ignored)"
    )
    for problem in problems:
        print(f"  {problem}")
    if args.counts:
        pathlib.Path(args.counts).write_text(f"{passed} {len(problems)}\n")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
