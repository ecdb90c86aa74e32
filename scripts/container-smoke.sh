#!/usr/bin/env bash
# Builds the container image from the Dockerfile and smoke-tests it:
# the image's configuration (non-root user, port, catalogs path,
# HEALTHCHECK), then a container run with a read-only root file system and
# no capabilities: /healthz, /readyz, tools/list from the host through the
# published port, search → load → invoke on the demo catalog with the
# image's own `sezzlee client`, the HEALTHCHECK itself, and a SIGTERM that
# ends it with exit code 0; then catalogs mounted the way Kubernetes mounts
# a ConfigMap, and a live reload when its `..data` link is swapped. Prints
# the image size and the gateway's memory, and exits non-zero on any
# failure.
#
#   scripts/container-smoke.sh            # podman, else a working docker
#
# Installs podman (Debian's) when neither engine is there. Where the base
# images' registries cannot be reached (this project's machines reach only
# package registries), it builds equivalent base images from Debian's
# packages and the machine's Rust toolchain and passes them as the
# Dockerfile's RUST_IMAGE and RUNTIME_IMAGE arguments, saying so.
#
# Environment: CONTAINER_ENGINE (podman|docker), SEZZLEE_IMAGE (the tag
# built, localhost/sezzlee:smoke), SEZZLEE_SMOKE_PORT (host port; a free one),
# SEZZLEE_RUST_IMAGE / SEZZLEE_RUNTIME_IMAGE (base images to use instead of
# the Dockerfile's), SEZZLEE_STANDIN=1 (build the stand-in bases without
# trying the registries first), SEZZLEE_SMOKE_KEEP=1 (keep the container).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
IMAGE=${SEZZLEE_IMAGE:-localhost/sezzlee:smoke}
PORT=${SEZZLEE_SMOKE_PORT:-$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')}
NAME=sezzlee-smoke-$$
ENGINE=${CONTAINER_ENGINE:-}
DEFAULT_RUST_IMAGE=docker.io/library/rust:1-bookworm
DEFAULT_RUNTIME_IMAGE=gcr.io/distroless/cc-debian12:nonroot
STANDIN_RUST=localhost/sezzlee-standin/rust:1-bookworm
STANDIN_RUNTIME=localhost/sezzlee-standin/cc-debian12:nonroot
PASSED=0

log() { echo "container-smoke: $*" >&2; }
fail() {
    log "FAILED: $*"
    echo "container-smoke: $PASSED passed, 1 failed"
    exit 1
}
pass() {
    PASSED=$((PASSED + 1))
    log "ok: $*"
}

apt_install() {
    if ! command -v apt-get >/dev/null || [ "$(id -u)" != 0 ]; then
        fail "$* missing and cannot be installed here (needs root and apt-get)"
    fi
    log "installing $* (Debian packages)"
    if [ -z "${APT_UPDATED:-}" ]; then
        apt-get update -qq >/dev/null
        APT_UPDATED=1
    fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

# --- the engine --------------------------------------------------------
if [ -z "$ENGINE" ]; then
    if command -v podman >/dev/null; then
        ENGINE=podman
    elif command -v docker >/dev/null && docker info >/dev/null 2>&1; then
        ENGINE=docker
    else
        apt_install podman
        ENGINE=podman
    fi
fi
ENGINE_ARGS=()
BUILD_ARGS=()
if [ "$ENGINE" = podman ]; then
    # crun (podman's default runtime on Debian) refuses a hybrid cgroup
    # layout (v1 controllers beside a v2 mount); runc runs there.
    if [ "$(stat -f -c %T /sys/fs/cgroup/unified 2>/dev/null)" = cgroup2fs ]; then
        command -v runc >/dev/null || apt_install runc
        ENGINE_ARGS=(--runtime runc)
    fi
    # The OCI image format has no HEALTHCHECK: keep Docker's.
    BUILD_ARGS=(--format docker)
else
    # The Dockerfile's cache mounts need BuildKit (the legacy builder
    # cannot read them).
    export DOCKER_BUILDKIT=1
fi
engine() { "$ENGINE" "${ENGINE_ARGS[@]}" "$@"; }
# The engine's default limits (a million open files) can exceed what this
# process may grant without CAP_SYS_RESOURCE: ask for what it has.
NOFILE=$(ulimit -Hn)
if [ "$NOFILE" = unlimited ] || [ "$NOFILE" -gt 1048576 ]; then NOFILE=1048576; fi
LIMITS=(--ulimit "nofile=$NOFILE:$NOFILE" --ulimit nproc=4096:4096)
log "engine: $ENGINE ${ENGINE_ARGS[*]} ($("$ENGINE" --version))"

have_image() { engine image inspect "$1" >/dev/null 2>&1; }
pull() {
    log "pulling $1"
    timeout 600 "$ENGINE" pull "$1" >/dev/null 2>&1
}

# --- stand-in base images from Debian packages --------------------------
# What rust:1-bookworm is for the build: Debian bookworm with gcc and the
# C library's headers, and a Rust toolchain under /usr/local (here the
# machine's own, the stable one rustup installed).
build_standin_rust() {
    command -v debootstrap >/dev/null || apt_install debootstrap
    local sysroot work
    sysroot=$(rustc +stable --print sysroot 2>/dev/null || rustc --print sysroot) ||
        fail "no Rust toolchain on this machine to put in the stand-in builder"
    work=$(mktemp -d)
    log "stand-in builder: debootstrap bookworm (gcc, libc6-dev) + $("$sysroot/bin/rustc" --version)"
    debootstrap --variant=minbase --include=gcc,libc6-dev,ca-certificates \
        bookworm "$work/rootfs" >"$work/debootstrap.log" 2>&1 ||
        { tail -20 "$work/debootstrap.log" >&2; fail "debootstrap"; }
    # The machine's own CA certificates: package registries may be reached
    # through a proxy that this machine trusts and Debian's list does not.
    cp /etc/ssl/certs/ca-certificates.crt "$work/rootfs/etc/ssl/certs/ca-certificates.crt"
    local toolchain=$work/rootfs/usr/local/rustup/toolchains/stable-x86_64-unknown-linux-gnu
    mkdir -p "$toolchain/bin" "$work/rootfs/usr/local/cargo/bin"
    cp -a "$sysroot/lib" "$sysroot/libexec" "$toolchain/"
    cp -a "$sysroot/bin/cargo" "$sysroot/bin/rustc" "$sysroot/bin/rustdoc" "$toolchain/bin/"
    for tool in cargo rustc rustdoc; do
        ln -s "../../rustup/toolchains/stable-x86_64-unknown-linux-gnu/bin/$tool" \
            "$work/rootfs/usr/local/cargo/bin/$tool"
    done
    tar -C "$work/rootfs" -c . | engine import \
        --change 'ENV RUSTUP_HOME=/usr/local/rustup' \
        --change 'ENV CARGO_HOME=/usr/local/cargo' \
        --change 'ENV PATH=/usr/local/cargo/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        - "$STANDIN_RUST" >/dev/null
    rm -rf "$work"
}

# What distroless/cc-debian12:nonroot is: bookworm's C library, libgcc,
# CA certificates, /etc/passwd with nonroot (65532), no shell (unpacked
# from the packages: no maintainer scripts run, none are needed).
build_standin_runtime() {
    local work
    work=$(mktemp -d)
    log "stand-in runtime: bookworm's libc6, libgcc-s1, netbase, base-files, CA certificates; nonroot 65532"
    [ -n "${APT_UPDATED:-}" ] || { apt-get update -qq >/dev/null && APT_UPDATED=1; }
    (cd "$work" && apt-get download -qq libc6 libgcc-s1 gcc-12-base netbase base-files \
        ca-certificates 2>/dev/null) ||
        fail "apt-get download of the runtime's packages"
    mkdir -p "$work/rootfs"
    for deb in "$work"/*.deb; do dpkg-deb -x "$deb" "$work/rootfs"; done
    local r=$work/rootfs
    rm -rf "$r/usr/share/doc" "$r/usr/share/man" "$r/usr/share/lintian" "$r/usr/share/locale"
    mkdir -p "$r/etc/ssl/certs" "$r/tmp" "$r/home/nonroot"
    cat "$r"/usr/share/ca-certificates/mozilla/*.crt >"$r/etc/ssl/certs/ca-certificates.crt"
    rm -rf "$r/usr/sbin" "$r/usr/share/ca-certificates" "$r/etc/ca-certificates.conf"
    chmod 1777 "$r/tmp"
    chown 65532:65532 "$r/home/nonroot"
    printf 'root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' >"$r/etc/passwd"
    printf 'root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n' >"$r/etc/group"
    tar -C "$r" -c . | engine import --change 'USER 65532' \
        --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        - "$STANDIN_RUNTIME" >/dev/null
    rm -rf "$work"
}

base_image() { # variable, default, stand-in, builder function, override
    local default=$2 standin=$3 build=$4 override=$5 chosen
    if [ -n "$override" ]; then
        chosen=$override
    elif [ -z "${SEZZLEE_STANDIN:-}" ] && { have_image "$default" || pull "$default"; }; then
        chosen=$default
    else
        [ -n "${SEZZLEE_STANDIN:-}" ] || log "cannot pull $default: using a stand-in built from Debian's packages"
        have_image "$standin" || "$build"
        chosen=$standin
    fi
    printf -v "$1" '%s' "$chosen"
}
base_image RUST_IMAGE "$DEFAULT_RUST_IMAGE" "$STANDIN_RUST" build_standin_rust "${SEZZLEE_RUST_IMAGE:-}"
base_image RUNTIME_IMAGE "$DEFAULT_RUNTIME_IMAGE" "$STANDIN_RUNTIME" build_standin_runtime "${SEZZLEE_RUNTIME_IMAGE:-}"
log "bases: builder $RUST_IMAGE, runtime $RUNTIME_IMAGE"

# --- build -------------------------------------------------------------
started=$(date +%s)
engine build "${BUILD_ARGS[@]}" "${LIMITS[@]}" \
    --build-arg "RUST_IMAGE=$RUST_IMAGE" --build-arg "RUNTIME_IMAGE=$RUNTIME_IMAGE" \
    -t "$IMAGE" -f "$ROOT/Dockerfile" "$ROOT" >&2 || fail "image build"
pass "built $IMAGE in $(($(date +%s) - started)) s"

# --- the image's configuration -----------------------------------------
inspect() { engine image inspect --format "$1" "$IMAGE"; }
[ "$(inspect '{{.Config.User}}')" = 65532:65532 ] || fail "user $(inspect '{{.Config.User}}')"
[ "$(inspect '{{json .Config.ExposedPorts}}')" = '{"8080/tcp":{}}' ] ||
    fail "exposed ports $(inspect '{{json .Config.ExposedPorts}}')"
env=$(inspect '{{json .Config.Env}}')
grep -q '"SEZZLEE_CATALOGS=/etc/sezzlee/catalogs"' <<<"$env" || fail "env $env"
grep -q '"SEZZLEE_LISTEN=0.0.0.0:8080"' <<<"$env" || fail "env $env"
[ "$(inspect '{{json .Config.Entrypoint}}')" = '["/usr/local/bin/sezzlee"]' ] ||
    fail "entrypoint $(inspect '{{json .Config.Entrypoint}}')"
[ "$(inspect '{{json .Config.Cmd}}')" = '["serve"]' ] || fail "cmd $(inspect '{{json .Config.Cmd}}')"
health=$(inspect '{{json .Config.Healthcheck}}')
grep -q '"Test":\["CMD","/usr/local/bin/sezzlee","health"\]' <<<"$health" || fail "healthcheck $health"
pass "image config: user 65532:65532, port 8080, catalogs and listen env, entrypoint, HEALTHCHECK sezzlee health"
size=$(inspect '{{.Size}}')
log "image size: $size bytes ($((size / 1048576)) MiB, uncompressed)"

# --- a container -------------------------------------------------------
cleanup() {
    if [ -z "${SEZZLEE_SMOKE_KEEP:-}" ]; then
        engine rm -f "$NAME" >/dev/null 2>&1 || true
    fi
    rm -f "${ENGINE_LOG:-}"
    rm -rf "${CONFIGMAP:-}"
}
trap cleanup EXIT
# (Without systemd, podman logs that it cannot time the HEALTHCHECK; it is
# run below with `podman healthcheck run`. Its messages are shown only when
# the run fails.)
ENGINE_LOG=$(mktemp)
engine run -d --name "$NAME" --read-only --cap-drop ALL \
    --security-opt no-new-privileges "${LIMITS[@]}" \
    -p "127.0.0.1:$PORT:8080" "$IMAGE" >/dev/null 2>"$ENGINE_LOG" ||
    { cat "$ENGINE_LOG" >&2; fail "container run"; }
URL=http://127.0.0.1:$PORT
for _ in $(seq 1 120); do
    if curl -fsS -m 2 "$URL/healthz" >/dev/null 2>&1; then break; fi
    if [ "$(engine inspect --format '{{.State.Running}}' "$NAME")" != true ]; then
        engine logs "$NAME" >&2 || true
        fail "the container stopped"
    fi
    sleep 0.5
done
curl -fsS -m 5 "$URL/healthz" | grep -q '"ok"' || { engine logs "$NAME" >&2; fail "/healthz"; }
pass "GET /healthz through the published port"
curl -fsS -m 5 "$URL/readyz" >/dev/null || fail "/readyz"
pass "GET /readyz"

pid=$(engine inspect --format '{{.State.Pid}}' "$NAME")
if [ -r "/proc/$pid/status" ]; then
    uid=$(awk '/^Uid:/ {print $2}' "/proc/$pid/status")
    [ "$uid" = 65532 ] || fail "the gateway runs as uid $uid"
    pass "the gateway runs as uid 65532"
fi

tools=$(curl -fsS -m 10 "$URL/mcp" -H 'content-type: application/json' \
    -H 'accept: application/json, text/event-stream' -H 'mcp-protocol-version: 2025-06-18' \
    -d '{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}') || fail "tools/list"
for tool in search_tools load_tool invoke_tool; do
    grep -q "\"$tool\"" <<<"$tools" || fail "tools/list lacks $tool: $tools"
done
pass "tools/list from the host: search_tools, load_tool, invoke_tool"

client() { engine exec "$NAME" /usr/local/bin/sezzlee client http://127.0.0.1:8080/mcp "$@"; }
found=$(client search order --limit 5) || fail "search"
grep -q list_orders <<<"$found" || fail "search found no list_orders: $found"
client load list_orders >/dev/null || fail "load_tool list_orders"
invoked=$(client invoke list_orders '{}') || fail "invoke list_orders: $invoked"
grep -q '^HTTP 200' <<<"$invoked" || fail "invoke list_orders: $invoked"
pass "search → load → pinned invoke of list_orders (demo backend) with the image's sezzlee client"

if [ "$ENGINE" = podman ]; then
    engine healthcheck run "$NAME" >/dev/null || fail "podman healthcheck run"
    pass "HEALTHCHECK (podman healthcheck run): healthy"
else
    for _ in $(seq 1 40); do
        status=$(docker inspect --format '{{.State.Health.Status}}' "$NAME")
        [ "$status" = healthy ] && break
        sleep 1
    done
    [ "$status" = healthy ] || fail "HEALTHCHECK status $status"
    pass "HEALTHCHECK: healthy"
fi

if [ -r "/proc/$pid/status" ]; then
    log "gateway memory on the demo catalog: $(awk '/^VmRSS:/ {print $2, $3}' "/proc/$pid/status") RSS"
fi

engine stop -t 15 "$NAME" >/dev/null 2>"$ENGINE_LOG" || { cat "$ENGINE_LOG" >&2; fail "stop"; }
code=$(engine inspect --format '{{.State.ExitCode}}' "$NAME")
[ "$code" = 0 ] || { engine logs "$NAME" >&2; fail "exit code $code after SIGTERM"; }
pass "SIGTERM: graceful exit 0"

# --- catalogs mounted as Kubernetes mounts a ConfigMap -----------------
# A timestamped folder, `..data` linking to it and one link per file
# through `..data`, mounted read-only over the image's catalogs; an update
# writes a new folder and renames a new `..data` link over the old one.
CONFIGMAP=$(mktemp -d)
chmod 755 "$CONFIGMAP"
mkdir "$CONFIGMAP/..v1"
cp "$ROOT/catalogs/orders.yaml" "$ROOT/catalogs/orders.sezzlee.yaml" "$CONFIGMAP/..v1/"
ln -s ..v1 "$CONFIGMAP/..data"
for file in orders.yaml orders.sezzlee.yaml; do ln -s "..data/$file" "$CONFIGMAP/$file"; done
chmod -R a+rX "$CONFIGMAP"
engine rm -f "$NAME" >/dev/null 2>&1
engine run -d --name "$NAME" --read-only --cap-drop ALL \
    --security-opt no-new-privileges "${LIMITS[@]}" \
    -v "$CONFIGMAP:/etc/sezzlee/catalogs:ro" "$IMAGE" >/dev/null 2>"$ENGINE_LOG" ||
    { cat "$ENGINE_LOG" >&2; fail "container run with mounted catalogs"; }
for _ in $(seq 1 120); do
    client search "list orders" --limit 1 >/dev/null 2>&1 && break
    sleep 0.5
done
client search "list orders" --limit 1 | grep -q "newest first" || fail "the mounted catalog is not served"
mkdir "$CONFIGMAP/..v2"
cp "$CONFIGMAP/..v1/orders.sezzlee.yaml" "$CONFIGMAP/..v2/"
sed 's/Lists orders, newest first\./Lists orders, newest first (version two)./' \
    "$CONFIGMAP/..v1/orders.yaml" >"$CONFIGMAP/..v2/orders.yaml"
chmod -R a+rX "$CONFIGMAP/..v2"
ln -s ..v2 "$CONFIGMAP/..data_tmp"
mv -T "$CONFIGMAP/..data_tmp" "$CONFIGMAP/..data"
rm -rf "$CONFIGMAP/..v1"
reloaded=
for _ in $(seq 1 100); do
    if client search "list orders" --limit 1 2>/dev/null | grep -q "version two"; then
        reloaded=1
        break
    fi
    sleep 0.2
done
[ -n "$reloaded" ] || { engine logs "$NAME" >&2; fail "the ..data swap was not picked up"; }
pass "catalogs mounted read-only as a ConfigMap is: served, and reloaded live on a ..data swap"
engine rm -f "$NAME" >/dev/null 2>&1
rm -rf "$CONFIGMAP"

echo "container-smoke: $PASSED passed, 0 failed"
