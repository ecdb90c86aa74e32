#!/usr/bin/env bash
# The soak, by hand: the release gateway on a copy of the
# shipped catalogs/ under a mixed load of the three tools in both MCP eras,
# listen streams held open, a reload every second, RSS, descriptors,
# threads, tokio tasks and listen streams sampled every second, and a
# verdict (flat within the stated tolerances, no unexpected error). It
# exists so that a leak that no short test shows can be looked for over
# minutes; examples/soak.rs says what it does and judges. `.ci/run` runs a
# 75-second one.
#
#   scripts/soak.sh [MINUTES]        # default 10
#   SOAK_ARGS='--callers 16 --listeners 16 --pause-ms 0' scripts/soak.sh 30
#
# Builds target/release/sezzlee (the gateway under test) and the driver
# (target/debug/examples/soak: a debug build is enough to drive it, and
# `cargo test` has built most of it already). Writes the samples to
# target/soak-samples.csv and the gateway's log to target/soak-sezzlee.log.
# Exits 0 when the verdict passes, 1 when it fails, 2 when the soak could
# not run.
set -euo pipefail
cd "$(dirname "$0")/.."

minutes=${1:-10}
if ! [[ "$minutes" =~ ^[0-9]+$ ]] || [ "$minutes" -lt 1 ]; then
    echo "usage: scripts/soak.sh [MINUTES]   (a whole number, at least 1)" >&2
    exit 2
fi

echo "== soak: cargo build --release (the gateway) and the driver"
cargo build --release --locked --quiet --bin sezzlee
cargo build --locked --quiet --example soak

echo "== soak: $minutes minute(s)"
# SOAK_ARGS is split into words on purpose.
# shellcheck disable=SC2086
exec target/debug/examples/soak --sezzlee target/release/sezzlee --catalogs catalogs \
    --seconds $((minutes * 60)) ${SOAK_ARGS:-}
