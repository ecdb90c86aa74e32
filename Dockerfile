# sezzlee's container image (README: "Deploying").
#
#   podman build --format docker -t sezzlee .     # or: docker build -t sezzlee .
#   podman run --rm --read-only -p 8080:8080 sezzlee
#
# The gateway then serves the demo catalog shipped at /etc/sezzlee/catalogs
# on http://127.0.0.1:8080/mcp (its demo backend is built in). Mount your own
# catalogs folder over that path, and configure it by SEZZLEE_* variables.
#
# The RUN step uses cache mounts (BuildKit, or podman/buildah), so a rebuild
# compiles only what changed; the legacy `DOCKER_BUILDKIT=0` builder cannot
# read them. `--format docker` keeps the HEALTHCHECK under podman (the OCI
# image format has no place for it). The base images are arguments so that a
# machine without access to their registries can build from equivalent
# images of its own (scripts/container-smoke.sh does so).
ARG RUST_IMAGE=docker.io/library/rust:1-bookworm
ARG RUNTIME_IMAGE=gcr.io/distroless/cc-debian12:nonroot

FROM ${RUST_IMAGE} AS builder
WORKDIR /build
COPY . .
# The commit built, shown by /status and sezzlee_build_info (the build
# context has no .git): --build-arg SEZZLEE_BUILD_COMMIT=$(git rev-parse HEAD).
ARG SEZZLEE_BUILD_COMMIT=
# Without the release profile's line tables the binary is about 28 MB
# instead of 120 MB; its symbols (function names in backtraces) stay.
ENV CARGO_PROFILE_RELEASE_DEBUG=0
RUN --mount=type=cache,id=sezzlee-cargo-registry,target=/usr/local/cargo/registry \
    --mount=type=cache,id=sezzlee-target,target=/build/target \
    cargo build --release --locked --bin sezzlee \
    && install -m 0755 target/release/sezzlee /usr/local/bin/sezzlee

# distroless/cc: glibc, libgcc and CA certificates, no shell, no package
# manager; user 65532 ("nonroot").
FROM ${RUNTIME_IMAGE}
COPY --from=builder /usr/local/bin/sezzlee /usr/local/bin/sezzlee
# The demo catalog (orders.yaml and its sidecar), readable, owned by root:
# the gateway only reads its catalogs.
COPY catalogs/ /etc/sezzlee/catalogs/
# Every setting is a SEZZLEE_* variable (README: "Settings"); these two
# make the image serve on every interface and read the mounted catalogs.
# The gateway writes nothing but logs to stderr: a read-only root file
# system is enough.
ENV SEZZLEE_CATALOGS=/etc/sezzlee/catalogs \
    SEZZLEE_LISTEN=0.0.0.0:8080
# mimalloc returns freed memory at once: half glibc's RSS on the shared
# corpus, large requests' memory given back (benches/README.md, "Allocators").
ENV MIMALLOC_PURGE_DELAY=0
# Numeric, so that Kubernetes' runAsNonRoot can check it without a passwd.
USER 65532:65532
EXPOSE 8080
# `sezzlee health` asks /healthz on the port SEZZLEE_LISTEN names (no shell
# or curl in the image). A large catalog takes tens of seconds to load
# before the port opens (benches/README.md), hence the start period.
HEALTHCHECK --interval=10s --timeout=3s --start-period=60s --retries=3 \
    CMD ["/usr/local/bin/sezzlee", "health"]
ENTRYPOINT ["/usr/local/bin/sezzlee"]
CMD ["serve"]
