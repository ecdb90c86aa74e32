#!/usr/bin/env bash
# fetch-search-model.sh: fetch the static word-embedding model that
# sezzlee's semantic search reads (`search_model` / SEZZLEE_SEARCH_MODEL).
#
# What it is for
#   Agents describe a need in their own words ("abort the build", "text this
#   number"); keyword search finds only the words a document uses. With a
#   model, search_tools also ranks tools by meaning and fuses both rankings
#   (see ARCHITECTURE.md, "Semantic search"). The model is WordLlama's
#   `l2_supercat_256`: a table of 32,000 token vectors (256 dimensions)
#   distilled from a large language model's embeddings, with its tokenizer.
#   It runs on the CPU (a lookup and an average per text), needs no runtime
#   library, and is 18 MB. Without it search is keyword search, as before.
#
# What it does
#   `pip download wordllama==0.4.0.post1` (PyPI is the only network access;
#   nothing is installed), checks the wheel against the pinned sha256, and
#   extracts the two files the model is made of into DEST (argument 1;
#   default target/search-model under the repository root):
#     DEST/tokenizer.json          (the wheel's l2_supercat_tokenizer_config.json)
#     DEST/embeddings.safetensors  (the wheel's l2_supercat_256.safetensors)
#   Each extracted file is checked against its pinned sha256 too. Idempotent:
#   a DEST that already holds both files with the right digests is left as is.
#
# Licence
#   WordLlama is MIT-licensed (https://github.com/dleemiller/WordLlama); its
#   token vectors derive from Llama 2's embedding table (Llama 2 Community
#   Licence). The files are not committed to this repository.
#
# Usage: scripts/fetch-search-model.sh [DEST]
set -euo pipefail

VERSION=0.4.0.post1
WHEEL_SHA256=42c2c88907ace0b0681ac6f9092d6a300a6409a5d2d61071a3fb5e7159370c97
TOKENIZER_SHA256=93248f2a9ec36c7b35f700a033d5f36228aae48db61aee31007fa49062cdeb68
WEIGHTS_SHA256=64b47a2dc493cb8e85944076601189739852d7b64e0e1eedcb1937a251cd9fd5

ROOT=$(cd "$(dirname "$0")/.." && pwd)
DEST=${1:-$ROOT/target/search-model}
mkdir -p "$DEST"
DEST=$(cd "$DEST" && pwd)

has() { [ -f "$1" ] && [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$2" ]; }
if has "$DEST/tokenizer.json" "$TOKENIZER_SHA256" && has "$DEST/embeddings.safetensors" "$WEIGHTS_SHA256"; then
    echo "export SEZZLEE_SEARCH_MODEL=$DEST"
    exit 0
fi

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
# The wheel is the same for every CPython 3.x on x86-64 Linux as far as the
# two data files go; ask for the one whose digest is pinned.
# pip itself, or one in a throwaway venv when the system Python has none.
PIP=(python3 -m pip)
if ! python3 -m pip --version >/dev/null 2>&1; then
    python3 -m venv "$WORK/venv" >/dev/null 2>&1 || {
        echo "fetch-search-model: needs pip (install python3-pip or python3-venv)" >&2
        exit 1
    }
    PIP=("$WORK/venv/bin/python" -m pip)
fi
"${PIP[@]}" download --quiet --no-deps --only-binary=:all: \
    --python-version 3.11 --platform manylinux2014_x86_64 \
    "wordllama==$VERSION" -d "$WORK"
WHEEL=$(ls "$WORK"/wordllama-"$VERSION"-*.whl)
if [ "$(sha256sum "$WHEEL" | cut -d' ' -f1)" != "$WHEEL_SHA256" ]; then
    echo "fetch-search-model: $WHEEL does not have the pinned sha256" >&2
    exit 1
fi
python3 - "$WHEEL" "$WORK" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as wheel:
    for member, name in [
        ("wordllama/tokenizers/l2_supercat_tokenizer_config.json", "tokenizer.json"),
        ("wordllama/weights/l2_supercat_256.safetensors", "embeddings.safetensors"),
    ]:
        with wheel.open(member) as source, open(f"{sys.argv[2]}/{name}", "wb") as out:
            out.write(source.read())
PY
has "$WORK/tokenizer.json" "$TOKENIZER_SHA256" || { echo "fetch-search-model: tokenizer digest differs" >&2; exit 1; }
has "$WORK/embeddings.safetensors" "$WEIGHTS_SHA256" || { echo "fetch-search-model: weights digest differs" >&2; exit 1; }
mv "$WORK/tokenizer.json" "$WORK/embeddings.safetensors" "$DEST/"
echo "export SEZZLEE_SEARCH_MODEL=$DEST"
