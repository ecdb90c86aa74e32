#!/usr/bin/env bash
# Three sezzlee replicas behind a real nginx during a rolling catalog
# update, by hand, on the release build: runs tests/it/rolling_update.rs
# (agents looping search -> load -> pinned invoke through nginx while the
# replicas are updated one by one, two of them stopped with SIGTERM and
# started again) and prints its figures line: requests sent, failed by
# code, lost at SIGTERM, stale pins refused, retries, requests in flight at
# each SIGTERM, the agents' reloads, each replica's generations.
#
#   scripts/rolling-update.sh                 # once, nginx hashing by caller
#   scripts/rolling-update.sh --round-robin   # also behind a plain round robin
#   scripts/rolling-update.sh --runs 5        # five times each
#   scripts/rolling-update.sh --bench         # then benches/replicas.rs
#                                             # (3 replicas vs 1, requests/s)
#
# Needs nginx (Debian: apt-get install -y nginx-light); SEZZLEE_TEST_NGINX
# names another binary. Exits 1 if any run failed.
set -euo pipefail
cd "$(dirname "$0")/.."

balances=(hash)
runs=1
bench=0
while [ $# -gt 0 ]; do
    case "$1" in
        --round-robin) balances=(hash round-robin) ;;
        --runs) runs="$2"; shift ;;
        --bench) bench=1 ;;
        -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
        *) echo "unknown option: $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done

nginx="${SEZZLEE_TEST_NGINX:-$(command -v nginx || echo /usr/sbin/nginx)}"
if ! "$nginx" -v >/dev/null 2>&1; then
    echo "no nginx at '$nginx': install it (Debian: apt-get install -y nginx-light) or set SEZZLEE_TEST_NGINX" >&2
    exit 2
fi
export SEZZLEE_TEST_NGINX="$nginx"

echo "== building the release test binary"
cargo test --release --test it --no-run >/dev/null 2>&1 || cargo test --release --test it --no-run

log=$(mktemp)
trap 'rm -f "$log"' EXIT
failed=0
for balance in "${balances[@]}"; do
    for run in $(seq 1 "$runs"); do
        echo "== balance=$balance run $run/$runs"
        started=$SECONDS
        if SEZZLEE_ROLLING_BALANCE="$balance" cargo test -q --release --test it rolling_update \
            -- --nocapture --test-threads 1 >"$log" 2>&1; then
            status=passed
        else
            status=FAILED
            failed=1
        fi
        grep -E '^(rolling-update figures|LOST AT SIGTERM|SKIPPED)' "$log" || true
        if [ "$status" = FAILED ]; then
            grep -E 'panicked|assert' -A 3 "$log" | head -40
        fi
        echo "-- $status in $((SECONDS - started)) s"
    done
done

if [ "$bench" = 1 ]; then
    echo "== cargo bench --bench replicas"
    cargo bench --bench replicas
fi
exit "$failed"
