// The sezzlee console: one page, routed by the URL's fragment, drawn from
// the gateway's /console/api. No framework and no build step; the DOM is
// built with createElement and text nodes only (the Content-Security-Policy
// allows no inline script or style, and no text from the catalog is ever
// parsed as HTML). Credentials live in this script's memory: the
// operator's own for the page's life, a pasted caller's for one request.
"use strict";

(function () {
  const state = {
    own: null, // {authorization} or {header, value}: the operator's credential
    generation: null,
    listening: false,
    page: null,
  };

  // ---- DOM helpers -------------------------------------------------------
  function h(tag, attrs, ...children) {
    const el = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === undefined || value === null || value === false) continue;
      if (key === "class") el.className = value;
      else if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
      else el.setAttribute(key, value === true ? "" : String(value));
    }
    for (const child of children.flat(Infinity)) {
      if (child === undefined || child === null || child === false) continue;
      el.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return el;
  }
  function svg(tag, attrs, ...children) {
    const el = document.createElementNS("http://www.w3.org/2000/svg", tag);
    for (const [key, value] of Object.entries(attrs || {})) el.setAttribute(key, String(value));
    for (const child of children.flat(Infinity)) {
      if (child === undefined || child === null) continue;
      el.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return el;
  }
  const main = () => document.getElementById("main");
  function show(...nodes) {
    main().replaceChildren(...nodes);
  }
  function card(label, value, test) {
    return h("div", { class: "card" }, h("div", { class: "value", "data-test": test }, value), h("div", { class: "label" }, label));
  }
  function table(headers, rows, test) {
    return h("table", { "data-test": test },
      h("thead", {}, h("tr", {}, headers.map((x) => h("th", { class: x.num ? "num" : "" }, x.label || x)))),
      h("tbody", {}, rows));
  }
  const toolLink = (name) => h("a", { href: "#/tool/" + encodeURIComponent(name), "data-test": "tool-link" }, name);
  const docLink = (file) => h("a", { href: "#/documents/" + encodeURIComponent(file) }, file);
  const fmtMs = (ms) => (ms < 1 ? ms.toFixed(2) : ms < 100 ? ms.toFixed(1) : Math.round(ms)) + " ms";

  // ---- API -----------------------------------------------------------------
  function ownHeaders() {
    const headers = { "Content-Type": "application/json" };
    if (state.own && state.own.authorization) headers["Authorization"] = state.own.authorization;
    if (state.own && state.own.header) headers[state.own.header] = state.own.value;
    return headers;
  }
  class ApiError extends Error {
    constructor(status, message) { super(message); this.status = status; }
  }
  async function api(path, body) {
    const init = { headers: ownHeaders(), credentials: "omit", cache: "no-store" };
    if (body !== undefined) { init.method = "POST"; init.body = JSON.stringify(body); }
    const response = await fetch("/console/api/" + path, init);
    let data = null;
    try { data = await response.json(); } catch (_) { data = null; }
    if (response.status === 401 || response.status === 403) {
      signIn(data && data.message);
      throw new ApiError(response.status, (data && data.message) || "refused");
    }
    if (!response.ok) throw new ApiError(response.status, (data && data.message) || response.statusText);
    return data;
  }

  // ---- sign in (when the gateway has [auth]) ------------------------------
  function signIn(message) {
    document.getElementById("signin").hidden = false;
    main().hidden = true;
    document.getElementById("signin-error").textContent = message || "";
  }
  document.getElementById("signin-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const authorization = document.getElementById("signin-authorization").value.trim();
    const header = document.getElementById("signin-key-header").value.trim();
    const value = document.getElementById("signin-key-value").value;
    state.own = authorization ? { authorization } : header ? { header, value } : null;
    document.getElementById("signin").hidden = true;
    main().hidden = false;
    startListening();
    route();
  });

  // ---- live updates: a subscriptions/listen stream -------------------------
  async function startListening() {
    if (state.listening) return;
    state.listening = true;
    const live = document.getElementById("live");
    let delay = 500;
    while (state.listening) {
      try {
        const response = await fetch("/console/api/listen", {
          method: "POST",
          headers: Object.assign(ownHeaders(), { Accept: "text/event-stream" }),
          credentials: "omit",
          body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "subscriptions/listen", params: { notifications: { toolsListChanged: true } } }),
        });
        if (response.status === 401 || response.status === 403) { state.listening = false; live.textContent = "not live"; live.className = "live off"; return; }
        if (!response.ok || !response.body) throw new Error("listen " + response.status);
        live.textContent = "live"; live.className = "live on"; delay = 500;
        const reader = response.body.getReader();
        const decoder = new TextDecoder();
        let buffer = "";
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buffer += decoder.decode(value, { stream: true });
          let cut;
          while ((cut = buffer.indexOf("\n\n")) >= 0) {
            const event = buffer.slice(0, cut);
            buffer = buffer.slice(cut + 2);
            const data = event.split("\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(5).trim()).join("\n");
            if (!data) continue;
            let message = null;
            try { message = JSON.parse(data); } catch (_) { continue; }
            if (message.method === "notifications/tools/list_changed") {
              const generation = message.params && message.params._meta && message.params._meta["sezzlee/catalogGeneration"];
              onCatalogChanged(generation);
            }
          }
        }
      } catch (_) {
        // Reconnect below.
      }
      live.textContent = "reconnecting"; live.className = "live off";
      await new Promise((resolve) => setTimeout(resolve, delay));
      delay = Math.min(delay * 2, 10000);
    }
  }
  function onCatalogChanged(generation) {
    if (generation !== undefined) setGeneration(generation);
    // Pages that show state are drawn again; forms keep what was typed.
    if (["overview", "documents", "document", "changes", "tool"].includes(state.page)) route(true);
  }
  function setGeneration(generation) {
    state.generation = generation;
    const badge = document.getElementById("generation-badge");
    badge.textContent = "generation " + generation;
    badge.setAttribute("data-generation", generation);
  }

  // ---- pages ---------------------------------------------------------------
  async function overview() {
    const o = await api("overview");
    setGeneration(o.generation);
    const reloads = o.reloads.map((r) =>
      h("tr", { "data-test": "reload-row" },
        h("td", {}, r.at), h("td", {}, r.trigger),
        h("td", { class: r.result === "failed" ? "error" : r.result === "held" ? "warning" : "" }, r.result, r.detail ? h("div", { class: "muted" }, r.detail) : null),
        h("td", { class: "num" }, r.generation), h("td", { class: "num" }, fmtMs(r.durationMs)),
        h("td", { class: "num" }, r.filesBuilt + " / " + r.filesReused)));
    const upstreamList = Array.isArray(o.upstreams) ? o.upstreams : [];
    return [
      h("h1", {}, "Overview"),
      h("div", { class: "cards" },
        card("generation", o.generation, "generation"),
        card("tools", o.tools, "tool-count"),
        card("documents", o.documents, "document-count"),
        card("operations", o.operations, "operation-count"),
        card("errors / warnings", o.errors + " / " + o.warnings, "diagnostic-count"),
        card("listen streams", o.listenStreams, "listen-streams"),
        card("connections", o.connections.open + " of " + o.connections.max, "connections"),
        card("search model", o.searchModel ? o.searchModel.kind + " (" + o.searchModel.embedded + "/" + o.searchModel.tools + ")" : "keywords only", "search-model"),
        card("uptime", Math.round(o.uptimeSeconds) + " s", "uptime")),
      h("h2", {}, "Reloads"),
      table(["when", "trigger", "result", { label: "generation", num: true }, { label: "took", num: true }, { label: "files built / reused", num: true }], reloads, "reloads"),
      h("h2", {}, "Upstream MCP servers"),
      upstreamList.length === 0 ? h("p", { class: "muted" }, "none") :
        table(["file", "state", "transport", { label: "tools", num: true }, "last error"], upstreamList.map((u) =>
          h("tr", {}, h("td", {}, docLink(u.file || "")), h("td", { class: u.state === "up" ? "ok" : "error" }, u.state), h("td", { class: "mono" }, u.transport ? u.transport.kind + " " + (u.transport.url || u.transport.command || "") : ""), h("td", { class: "num" }, u.tools ?? ""), h("td", { class: "muted" }, u.lastError || ""))), "upstreams"),
      h("p", { class: "muted" }, "sezzlee " + o.version + (o.auth.configured ? " · callers identified ([auth])" : " · no [auth]: the console answers on loopback only")),
    ];
  }

  async function documents() {
    const d = await api("documents");
    setGeneration(d.generation);
    const rows = d.documents.map((x) =>
      h("tr", { "data-test": "document-row" },
        h("td", {}, docLink(x.file)), h("td", {}, x.title), h("td", {}, x.namespace),
        h("td", { class: "num" }, x.operations), h("td", { class: "num" }, x.tools),
        h("td", { class: "num" + (x.errors ? " error" : "") }, x.errors), h("td", { class: "num" + (x.warnings ? " warning" : "") }, x.warnings)));
    return [
      h("h1", {}, "Documents"),
      table(["file", "API", "namespace", { label: "operations", num: true }, { label: "tools", num: true }, { label: "errors", num: true }, { label: "warnings", num: true }], rows, "documents"),
      d.otherFiles.length ? [h("h2", {}, "Files that publish no tool but have diagnostics"), h("ul", {}, d.otherFiles.map((f) => h("li", {}, docLink(f))))] : null,
    ];
  }

  async function documentPage(file) {
    const d = await api("documents?file=" + encodeURIComponent(file));
    setGeneration(d.generation);
    const sidecar = d.sidecar;
    return [
      h("h1", {}, d.title || d.file),
      h("p", { class: "muted mono" }, d.file, d.namespace ? " · namespace " + d.namespace : ""),
      h("div", { class: "cards" }, card("operations", d.operations, "doc-operations"), card("tools", d.toolCount, "doc-tools"), card("compacted definitions", d.compacted, "doc-compacted"), card("diagnostics", d.diagnostics.length, "doc-diagnostics")),
      h("h2", {}, "Diagnostics"),
      d.diagnostics.length === 0 ? h("p", { class: "muted" }, "none") :
        table(["severity", "code", "where (JSON pointer)", "what to do"], d.diagnostics.map((x) =>
          h("tr", { "data-test": "diagnostic-row" }, h("td", { class: x.severity === "error" ? "error" : "warning" }, x.severity), h("td", { class: "mono" }, x.code), h("td", { class: "mono" }, x.pointer || "(the file)"), h("td", {}, x.message))), "diagnostics"),
      h("h2", {}, "Sidecar in effect"),
      sidecar ? table(["setting", "value"], [
        ["base URL", sidecar.baseUrl || "(the document's servers)"],
        ["timeout", sidecar.timeoutMs ? sidecar.timeoutMs + " ms" : "default"],
        ["static headers (values never shown)", (sidecar.staticHeaders || []).join(", ") || "none"],
        ["caller headers passed on", (sidecar.forwardHeaders || []).join(", ") || "none"],
        ["credential", sidecar.auth ? sidecar.auth.mode + (sidecar.auth.tokenUrl ? " via " + sidecar.auth.tokenUrl : "") : "static headers only"],
        ["quota", sidecar.quota ? JSON.stringify(sidecar.quota) : "none"],
      ].map(([k, v]) => h("tr", {}, h("td", {}, k), h("td", { class: "mono" }, v))), "sidecar") : h("p", { class: "muted" }, d.upstream ? "an upstream MCP server (see the Overview)" : "none"),
      h("h2", {}, "Tools (" + d.toolCount + ")"),
      table(["name", "route", "version", ""], d.tools.map((t) =>
        h("tr", { "data-test": "document-tool" }, h("td", {}, toolLink(t.name)), h("td", { class: "mono" }, t.route), h("td", { class: "mono muted" }, t.version), h("td", { class: "muted" }, t.compacted ? "compacted" : ""))), "document-tools"),
    ];
  }

  async function toolPage(name) {
    let t;
    try {
      t = await api("tool?name=" + encodeURIComponent(name));
    } catch (err) {
      if (err.status === 404) return [h("h1", {}, name), h("p", { class: "error", "data-test": "tool-missing" }, "Not in the served catalog (removed or renamed): " + err.message)];
      throw err;
    }
    setGeneration(t.generation);
    const c = t.compaction;
    const compacted = [c.inputDepth != null ? "inputSchema cut at depth " + c.inputDepth : null, c.outputDepth != null ? "outputSchema cut at depth " + c.outputDepth : null, c.textCut ? "long text left out" : null].filter(Boolean);
    return [
      h("h1", { "data-test": "tool-name" }, t.name),
      h("p", { class: "muted" }, docLink(t.document), " · ", h("span", { class: "mono" }, t.route), t.upstream ? " · upstream MCP tool" : ""),
      h("p", {}, "version ", h("code", { "data-test": "tool-version" }, t.version), compacted.length ? h("span", { class: "warning" }, " · " + compacted.join(", ")) : null),
      h("h2", {}, "Definition, as load_tool returns it"),
      h("pre", { "data-test": "tool-definition" }, JSON.stringify(t.definition, null, 2)),
      h("h2", {}, "Generations that changed it"),
      t.generations.length === 0 ? h("p", { class: "muted" }, "none kept") :
        table([{ label: "generation", num: true }, "when", "what", ""], t.generations.map((g) =>
          h("tr", {}, h("td", { class: "num" }, g.generation), h("td", {}, g.at), h("td", {}, g.kind),
            h("td", {}, g.diff ? h("a", { href: "#/diff/" + g.generation + "/" + encodeURIComponent(t.name) }, "diff") : ""))), "tool-generations"),
    ];
  }

  function explanation(e) {
    if (!e) return null;
    const words = e.keywords.map((k) =>
      h("div", {}, h("span", { class: "mono" }, k.keyword), " → ",
        k.matches.length === 0 ? h("span", { class: "muted" }, "no match") :
          k.matches.map((m) => h("span", { class: "pill " + m.kind, title: m.kind }, m.word + " in " + m.fields.join(", ") + (m.kind !== "whole" ? " (" + m.kind + ")" : "")))));
    return h("div", {},
      words,
      h("div", { class: "muted" },
        "keywords alone: " + (e.keywordRank ? "#" + e.keywordRank : "not matched"),
        e.meaningRank ? " · meaning alone: #" + e.meaningRank : "",
        e.meaningScore != null ? " · meaning score " + e.meaningScore.toFixed(3) : ""));
  }

  function resultsTable(result) {
    const page = result.page;
    if (result.isError) return h("pre", { class: "error", "data-test": "search-error" }, JSON.stringify(page, null, 2));
    const explained = new Map((result.explained || []).map((e) => [e.name, e]));
    const rows = (page.results || []).map((r, i) =>
      h("tr", { "data-test": "search-result" },
        h("td", { class: "num" }, i + 1),
        h("td", {}, h("div", { "data-test": "result-name" }, toolLink(r.name)), h("div", { class: "muted" }, r.description || ""), r.authUncertain ? h("span", { class: "pill" }, "authUncertain") : null),
        h("td", {}, explanation(explained.get(r.name)))));
    const m = result.meaning || {};
    return [
      h("p", { class: "muted", "data-test": "search-summary" },
        (page.total ?? 0) + " tools visible to this caller · " +
        (m.ranked ? "ranked by keywords and meaning (meaning weighs " + m.weight.toFixed(2) + ")" : m.model ? "ranked by keywords (meaning weighs nothing for a query this short)" : "ranked by keywords (no search model)") +
        (result.arguments.tags ? " · tags required: " + result.arguments.tags.join(", ") : "")),
      table([{ label: "#", num: true }, "tool", "why it ranked there"], rows, "search-results"),
    ];
  }

  function searchForm(test, withCredential, submit) {
    const query = h("input", { class: "wide", name: "query", placeholder: "what the agent asks for, in its words", "data-test": test + "-query" });
    const tags = h("input", { name: "tags", placeholder: "tags (comma separated)", "data-test": test + "-tags" });
    const limit = h("input", { name: "limit", type: "number", min: 1, max: 50, value: 10, "data-test": test + "-limit" });
    const authorization = h("input", { type: "password", autocomplete: "off", placeholder: "Bearer …", "data-test": test + "-authorization" });
    const keyHeader = h("input", { autocomplete: "off", placeholder: "X-Api-Key", "data-test": test + "-key-header" });
    const keyValue = h("input", { type: "password", autocomplete: "off", "data-test": test + "-key-value" });
    const form = h("form", { class: "inline", "data-test": test + "-form" },
      withCredential ? [h("label", {}, "caller's Authorization", authorization), h("label", {}, "or API key header", keyHeader), h("label", {}, "value", keyValue)] : null,
      h("label", {}, "query", query), h("label", {}, "tags", tags), h("label", {}, "limit", limit),
      h("button", { type: "submit", "data-test": test + "-submit" }, "Search"));
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      const body = { query: query.value, limit: Number(limit.value) || 10 };
      const tagList = tags.value.split(",").map((s) => s.trim()).filter(Boolean);
      if (tagList.length) body.tags = tagList;
      if (withCredential) {
        const as = { headers: {} };
        if (authorization.value.trim()) as.authorization = authorization.value.trim();
        if (keyHeader.value.trim()) as.headers[keyHeader.value.trim()] = keyValue.value;
        body.as = as;
        // The pasted credential is sent once and forgotten.
        authorization.value = ""; keyValue.value = "";
      }
      submit(body);
    });
    return form;
  }

  async function searchPage() {
    const out = h("div", { "data-test": "search-output" });
    const form = searchForm("search", false, async (body) => {
      out.replaceChildren(h("p", { class: "muted" }, "searching…"));
      try {
        const result = await api("search", body);
        setGeneration(result.generation);
        out.replaceChildren(...[resultsTable(result)].flat(Infinity).filter(Boolean));
      } catch (err) { out.replaceChildren(h("p", { class: "error" }, err.message)); }
    });
    return [h("h1", {}, "Search playground"), h("p", { class: "muted" }, "The page search_tools gives for this query, to the console's own caller, and why each tool ranked where it did."), form, out];
  }

  async function callerPage() {
    const out = h("div", { "data-test": "caller-output" });
    const form = searchForm("caller", true, async (body) => {
      out.replaceChildren(h("p", { class: "muted" }, "asking…"));
      try {
        const [view, found] = await Promise.all([api("caller", { as: body.as }), api("search", body)]);
        const who = view.caller;
        const list = (title, names, count, test) => [h("h2", {}, title + " (" + count + ")"), h("div", { "data-test": test }, names.map((n) => h("span", { class: "pill" }, n))), count > names.length ? h("p", { class: "muted" }, "and " + (count - names.length) + " more") : null];
        out.replaceChildren(...[
          h("p", { "data-test": "caller-identity" }, "credential: " + who.credential + (who.subject ? " · subject " + who.subject : "") + (who.scopes ? " · scopes " + who.scopes.join(" ") : "") + (who.roles ? " · roles " + who.roles.join(" ") : "")),
          h("div", { class: "cards" }, card("visible", view.counts.visible, "caller-visible-count"), card("hidden", view.counts.hidden, "caller-hidden-count"), card("authUncertain", view.counts.authUncertain, "caller-uncertain-count")),
          h("h2", {}, "search_tools as this caller"), resultsTable(found),
          list("Visible", view.visible, view.counts.visible, "caller-visible"),
          list("Visible, authUncertain", view.authUncertain, view.counts.authUncertain, "caller-uncertain"),
          list("Hidden", view.hidden, view.counts.hidden, "caller-hidden"),
        ].flat(Infinity).filter(Boolean));
      } catch (err) { out.replaceChildren(h("p", { class: "error" }, err.message)); }
    });
    return [h("h1", {}, "As a caller"), h("p", { class: "muted" }, "Paste a caller's token or API key: see exactly what it sees, and search as it. The credential is sent once and not kept."), form, out];
  }

  async function changesPage() {
    const c = await api("changes");
    setGeneration(c.generation);
    const entries = c.changes.map((e) => {
      const names = (list, kind) => list.map((x) => h("li", {}, h("span", { class: "pill" }, kind), toolLink(x.name), " ", h("span", { class: "mono muted" }, x.versionBefore ? x.versionBefore.slice(0, 12) + " → " + x.version.slice(0, 12) : x.version.slice(0, 12)),
        kind === "changed" && e.diffs.includes(x.name) ? [" ", h("a", { href: "#/diff/" + e.generation + "/" + encodeURIComponent(x.name), "data-test": "diff-link" }, "diff")] : null));
      return h("section", { class: "card", "data-test": "change-entry", "data-generation": e.generation },
        h("strong", {}, "generation " + e.generation), h("span", { class: "muted" }, " · " + e.at + " · " + e.counts.added + " added, " + e.counts.removed + " removed, " + e.counts.changed + " changed"),
        e.counts.changed ? h("p", { class: "warning" }, "Calls pinned to the versions before answer tool_changed now.") : null,
        h("ul", {}, names(e.added, "added"), names(e.removed, "removed"), names(e.changed, "changed")));
    });
    return [h("h1", {}, "Changes"), c.truncated ? h("p", { class: "muted" }, "Older generations are no longer kept.") : null,
      entries.length ? h("div", { class: "cards-column" }, entries) : h("p", { class: "muted", "data-test": "no-changes" }, "No generation has changed anything since the gateway started.")];
  }

  async function diffPage(generation, name) {
    const d = await api("diff?generation=" + encodeURIComponent(generation) + "&name=" + encodeURIComponent(name));
    const kind = (line) => line.startsWith("+++") || line.startsWith("---") ? "muted" : line.startsWith("+") ? "add" : line.startsWith("-") ? "del" : line.startsWith("@@") ? "hunk" : "";
    const lines = d.diff.replace(/\n$/, "").split("\n").map((line) => h("div", { class: kind(line) }, line || "\u00a0"));
    return [h("h1", {}, name), h("p", { class: "muted" }, "generation " + d.generation + " · version ", h("code", {}, d.versionBefore || "?"), " → ", h("code", {}, d.version || "?")),
      h("pre", { class: "diff", "data-test": "diff" }, lines)];
  }

  function barChart(items, test) {
    // items: [{label, value, cls}]
    const width = 520, row = 22, left = 170;
    const max = Math.max(1, ...items.map((i) => i.value));
    return svg("svg", { class: "chart", width, height: items.length * row + 10, "data-test": test, role: "img" },
      items.map((item, i) => [
        svg("text", { x: 6, y: i * row + 20 }, item.label),
        svg("rect", { x: left, y: i * row + 8, height: 14, width: Math.max(1, (width - left - 60) * item.value / max), class: item.cls || "bar" }),
        svg("text", { x: left + 6 + (width - left - 60) * item.value / max, y: i * row + 20 }, item.value),
      ]));
  }
  function histogram(latency, test) {
    const width = 520, height = 120, buckets = latency.buckets;
    const max = Math.max(1, ...buckets.map((b) => b.count), latency.above);
    const barWidth = (width - 20) / (buckets.length + 1);
    const bars = buckets.map((b, i) => [
      svg("rect", { x: 10 + i * barWidth, y: height - 20 - (height - 40) * b.count / max, width: barWidth - 3, height: (height - 40) * b.count / max, class: "bar" }),
      svg("text", { x: 10 + i * barWidth, y: height - 5 }, Number.isInteger(b.leMs) || b.leMs < 1 ? b.leMs : b.leMs.toFixed(1)),
    ]);
    return svg("svg", { class: "chart", width, height, "data-test": test, role: "img" }, bars, svg("text", { x: width - 120, y: 14 }, "≤ ms · mean " + fmtMs(latency.meanMs)));
  }

  async function trafficPage() {
    const t = await api("traffic");
    const tools = t.tools.map((x) => {
      const outcomes = Object.entries(x.outcomes).map(([name, value]) => ({ label: name, value, cls: name === "ok" ? "bar-ok" : "bar-bad" }));
      return h("div", { "data-test": "traffic-tool" }, h("h2", {}, x.tool + " · " + x.latency.count + " calls"), h("div", { class: "split" }, barChart(outcomes, "outcomes-" + x.tool), histogram(x.latency, "latency-" + x.tool)));
    });
    const backends = t.backends.map((b) =>
      h("tr", { "data-test": "backend-row" }, h("td", { class: "mono" }, b.host), Object.entries(b.outcomes).map(([k, v]) => h("td", { class: "num" + (v && k !== "2xx" ? " error" : "") }, v)), h("td", { class: "num" }, fmtMs(b.latency.meanMs))));
    const invoked = t.invoked.slice(0, 50).map((x) => ({ label: x.name.length > 26 ? x.name.slice(0, 25) + "…" : x.name, value: x.calls, cls: x.outcomes.ok === x.calls ? "bar-ok" : "bar-bad" }));
    return [h("h1", {}, "Traffic"), tools,
      h("h2", {}, "Backends"), t.backends.length ? table(["host", ...["2xx", "3xx", "4xx", "5xx", "unavailable", "timeout", "mean"].map((label) => ({ label, num: true }))], backends, "backends") : h("p", { class: "muted" }, "no backend called yet"),
      h("h2", {}, "Invoked (by tool up to " + t.perToolUpTo + " tools, else by document)"), invoked.length ? barChart(invoked, "invoked") : h("p", { class: "muted" }, "nothing invoked yet")];
  }

  // ---- routing ---------------------------------------------------------------
  async function route(refresh) {
    const hash = decodeURIComponent(location.hash.replace(/^#\/?/, "")) || "overview";
    const [page, ...rest] = hash.split("/");
    const arg = rest.join("/");
    const pages = {
      overview: () => overview(),
      documents: () => (arg ? documentPage(arg) : documents()),
      tool: () => toolPage(arg),
      search: () => searchPage(),
      caller: () => callerPage(),
      changes: () => changesPage(),
      diff: () => diffPage(rest[0], rest.slice(1).join("/")),
      traffic: () => trafficPage(),
    };
    const draw = pages[page] || pages.overview;
    // Forms are not drawn again when the catalog changes.
    if (refresh && (page === "search" || page === "caller")) return;
    state.page = page === "documents" && arg ? "document" : page;
    for (const link of document.querySelectorAll("nav a")) link.classList.toggle("active", link.dataset.page === page);
    try {
      const nodes = await draw();
      show(...[nodes].flat(Infinity).filter(Boolean));
      main().setAttribute("data-page", state.page);
      main().setAttribute("data-generation", state.generation ?? "");
      if (refresh) main().classList.add("flash");
      setTimeout(() => main().classList.remove("flash"), 1300);
    } catch (err) {
      if (!(err instanceof ApiError && (err.status === 401 || err.status === 403))) show(h("p", { class: "error" }, String(err.message || err)));
    }
  }
  window.addEventListener("hashchange", () => route(false));
  startListening();
  route(false).then(() => {
    // Pages that draw no generation (the forms, a diff, traffic) still show it.
    if (state.generation === null) api("overview").then((o) => setGeneration(o.generation)).catch(() => {});
  });
})();
