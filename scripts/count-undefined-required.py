#!/usr/bin/env python3
"""Counts tools whose inputSchema lists as required a member that its object
does not define, in `sezzlee check --emit` output (JSON lines on stdin).

Why: a member left out of input (`readOnly`) but still named by a
`required` of its composition (an `allOf` part, a `$ref`'d base) asks the
caller for a value it cannot send, and `invoke_tool` refuses every call
without it (issue 36). A member is defined for a `required` when the
object's own `properties`, its `allOf` parts (inline or `$ref`'d into
`$defs`, recursively), its own `$ref`, or for an inline `allOf`, `anyOf`
or `oneOf` part the object around it, name it. Documents also list undefined members on their own;
compare two runs (before and after a change) to see what the change did.

    sezzlee check DIR --emit | python3 scripts/count-undefined-required.py

Prints: tools, tools with an undefined required member, and the first
examples (tool, pointer, names).
"""

import json
import sys

SCHEMA_KEYS = ("items", "additionalProperties", "not", "if", "then", "else", "contains", "propertyNames")
ARRAY_KEYS = ("allOf", "anyOf", "oneOf", "prefixItems")
MAP_KEYS = ("properties", "patternProperties", "$defs", "dependentSchemas")


def target(ref, defs):
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        return defs.get(ref[len("#/$defs/"):].replace("~1", "/").replace("~0", "~"))
    return None


def defined(node, defs, seen):
    """Names the composition `node` defines."""
    if not isinstance(node, dict) or id(node) in seen:
        return set()
    seen = seen | {id(node)}
    names = set((node.get("properties") or {}).keys()) if isinstance(node.get("properties"), dict) else set()
    for part in node.get("allOf") or []:
        names |= defined(part, defs, seen)
    t = target(node.get("$ref"), defs)
    if t is not None:
        names |= defined(t, defs, seen)
    return names


def undefined(node, defs, context, at, found):
    if not isinstance(node, dict):
        return
    mine = defined(node, defs, set()) | context
    required = node.get("required")
    if isinstance(required, list):
        missing = [n for n in required if isinstance(n, str) and n not in mine]
        if missing:
            found.append((at, missing))
    for key, value in node.items():
        if key in SCHEMA_KEYS:
            undefined(value, defs, set(), f"{at}/{key}", found)
        elif key in ARRAY_KEYS and isinstance(value, list):
            for i, item in enumerate(value):
                # An inline part may list what the object around it
                # defines (`anyOf: [{required: [a]}, {required: [b]}]`
                # says "a or b").
                inherited = mine if key in ("allOf", "anyOf", "oneOf") else set()
                undefined(item, defs, inherited, f"{at}/{key}/{i}", found)
        elif key in MAP_KEYS and isinstance(value, dict):
            for name, member in value.items():
                undefined(member, defs, set(), f"{at}/{key}/{name}", found)


def main():
    tools = 0
    flagged = []
    for line in sys.stdin:
        line = line.strip()
        if not line.startswith("{"):
            continue
        tool = json.loads(line)
        schema = tool.get("inputSchema")
        if not isinstance(schema, dict):
            continue
        tools += 1
        found = []
        undefined(schema, schema.get("$defs") or {}, set(), "", found)
        if found:
            flagged.append((tool.get("name"), found))
    print(f"{tools} tools, {len(flagged)} with a required member their object does not define")
    for name, found in flagged[:10]:
        print(f"  {name}: {found[:3]}")


if __name__ == "__main__":
    main()
