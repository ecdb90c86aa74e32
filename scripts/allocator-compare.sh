#!/usr/bin/env bash
# Allocators compared in one run (benches/README.md,
# "Allocators"): RSS after large requests and after idling, RSS on the shared
# corpus after load and reloads, and the soak's throughput and p99, for each
# allocator and its settings, phase by phase so every variant meets the same
# machine. Ratios are to glibc with its defaults.
#
#   bash scripts/allocator-compare.sh            # builds the three binaries
#   ALLOC_BINS=DIR bash scripts/allocator-compare.sh   # sezzlee-{glibc,mimalloc,jemalloc} in DIR
#
# Environment: PROBE_IDLE (30 s), PROBE_ROUNDS (4), SOAK_SECONDS (60),
# CORPUS_RELOADS (2), CORPUS_SETTLE (20 s after each reload).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
target=${CARGO_TARGET_DIR:-$root/target}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
bins=${ALLOC_BINS:-}
if [[ -z $bins ]]; then
    bins=$work/bin
    mkdir -p "$bins"
    for features in "--no-default-features:glibc" "--no-default-features --features mimalloc:mimalloc" \
        "--no-default-features --features jemalloc:jemalloc"; do
        # shellcheck disable=SC2086
        cargo build --release --quiet --bin sezzlee ${features%:*}
        cp "$target/release/sezzlee" "$bins/sezzlee-${features#*:}"
    done
fi
cargo build --release --quiet --example soak
soak=$target/release/examples/soak

# name | binary | environment
variants=(
    "glibc|glibc|"
    "glibc-tuned|glibc|MALLOC_ARENA_MAX=2 MALLOC_TRIM_THRESHOLD_=131072 MALLOC_MMAP_THRESHOLD_=131072"
    "mimalloc|mimalloc|"
    "mimalloc-purge0|mimalloc|MIMALLOC_PURGE_DELAY=0"
    "jemalloc|jemalloc|"
    "jemalloc-decay|jemalloc|_RJEM_MALLOC_CONF=dirty_decay_ms:1000,muzzy_decay_ms:1000"
)
if [[ -n ${ALLOC_VARIANTS:-} ]]; then
    IFS=' ' read -r -a keep <<<"$ALLOC_VARIANTS"
    chosen=()
    for v in "${variants[@]}"; do
        for k in "${keep[@]}"; do [[ ${v%%|*} == "$k" ]] && chosen+=("$v"); done
    done
    variants=("${chosen[@]}")
fi

rss() { awk '/^VmRSS:/ {printf "%.1f", $2 / 1024}' "/proc/$1/status"; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
ready() { # port, seconds
    for _ in $(seq 1 $(($2 * 10))); do
        curl -fs "http://127.0.0.1:$1/readyz" >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    echo "gateway on $1 not ready" >&2
    return 1
}
# start NAME BIN ENV CATALOGS → sets pid, port
start() {
    port=$(free_port)
    # shellcheck disable=SC2086
    env $3 "$bins/sezzlee-$2" serve --catalogs "$4" --listen "127.0.0.1:$port" \
        >"$work/$1.log" 2>&1 &
    pid=$!
    ready "$port" 600
}
stop() { kill -TERM "$pid"; wait "$pid" || true; }

results=$work/results
: >"$results"
put() { echo "$1 $2 $3" >>"$results"; } # variant key value

echo "== (a) probe: 5 invoke_tool calls of ~3 MB a round, ${PROBE_ROUNDS:-4} rounds, ${PROBE_IDLE:-30} s idle after each"
mkdir -p "$work/catalogs"
cp catalogs/* "$work/catalogs/"
for v in "${variants[@]}"; do
    IFS='|' read -r name bin env <<<"$v"
    start "$name" "$bin" "$env" "$work/catalogs"
    line=$(python3 scripts/allocator-probe.py "http://127.0.0.1:$port/mcp" "$pid" 3000000 \
        "${PROBE_ROUNDS:-4}" "${PROBE_IDLE:-30}")
    stop
    echo "$name: $line"
    read -r -a f <<<"$line"
    put "$name" start "${f[1]}"
    put "$name" after1 "${f[3]}"
    put "$name" idle1 "${f[5]}"
    put "$name" after_last "${f[-3]}"
    put "$name" idle_last "${f[-1]}"
done

echo "== (b) shared corpus: RSS after load, after ${CORPUS_RELOADS:-2} reloads of the GitHub document"
mkdir -p "$work/corpus"
for gz in tests/fixtures/corpus/*.gz; do
    base=$(basename "$gz" .gz)
    gunzip -c "$gz" >"$work/corpus/$base"
done
for v in "${variants[@]}"; do
    IFS='|' read -r name bin env <<<"$v"
    rm -rf "$work/c"
    cp -r "$work/corpus" "$work/c"
    started=$(date +%s.%N)
    start "$name" "$bin" "$env" "$work/c"
    loaded=$(date +%s.%N)
    sleep 5
    put "$name" corpus_load "$(rss "$pid")"
    line="load $(rss "$pid")"
    for i in $(seq 1 "${CORPUS_RELOADS:-2}"); do
        # A changed byte (trailing whitespace): the document is built again.
        echo >>"$work/c/github.com_api.github.com_1.1.4.json"
        sleep "${CORPUS_SETTLE:-20}"
        line="$line reload$i $(rss "$pid")"
    done
    put "$name" corpus_reloaded "$(rss "$pid")"
    put "$name" corpus_start_s "$(echo "$loaded - $started" | bc)"
    stop
    echo "$name: $line (ready after $(echo "$loaded - $started" | bc) s)"
done

echo "== (c) soak: ${SOAK_SECONDS:-60} s each (examples/soak.rs)"
for v in "${variants[@]}"; do
    IFS='|' read -r name bin env <<<"$v"
    # shellcheck disable=SC2086
    env $env "$soak" --sezzlee "$bins/sezzlee-$bin" --catalogs catalogs \
        --seconds "${SOAK_SECONDS:-60}" --csv "$work/$name.csv" --log "$work/$name-soak.log" \
        >"$work/$name.soak" 2>&1 || echo "$name: soak verdict not PASS (see below)"
    rate=$(sed -n 's/^requests: [0-9]* (\([0-9.]*\)\/s)/\1/p' "$work/$name.soak")
    p99=$(awk '/ sent +p50/ {for (i = 1; i <= NF; i++) if ($i == "p99") print $(i + 1)}' \
        "$work/$name.soak" | sort -g | tail -1)
    soak_rss=$(awk '/^RSS/ {print $4}' "$work/$name.soak")
    verdict=$(sed -n 's/^VERDICT: //p' "$work/$name.soak")
    put "$name" soak_rate "$rate"
    put "$name" soak_p99 "$p99"
    put "$name" soak_rss "$soak_rss"
    echo "$name: $rate calls/s, worst tool p99 $p99 ms, RSS last median $soak_rss MiB; $verdict"
done

echo
echo "== figures (MiB, calls/s, ms) and, below each, the ratio to glibc in this run"
python3 - "$results" <<'PY'
import sys
rows = {}
order = []
for line in open(sys.argv[1]):
    name, key, value = line.split()
    if name not in rows:
        order.append(name)
    rows.setdefault(name, {})[key] = float(value) if value else float("nan")
keys = ["start", "after1", "idle1", "after_last", "idle_last", "corpus_load",
        "corpus_reloaded", "soak_rss", "soak_rate", "soak_p99"]
print("| allocator | " + " | ".join(keys) + " |")
print("|---" * (len(keys) + 1) + "|")
base = rows.get("glibc", rows[order[0]])
for name in order:
    r = rows[name]
    print(f"| {name} | " + " | ".join(f"{r.get(k, float('nan')):.1f}" for k in keys) + " |")
for name in order:
    r = rows[name]
    print(f"| {name} ÷ glibc | " + " | ".join(
        f"{r.get(k, float('nan')) / base[k]:.2f}" if base.get(k) else "?" for k in keys) + " |")
PY
