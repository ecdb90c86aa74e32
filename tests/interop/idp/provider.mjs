// A real OpenID provider for sezzlee's interop tests
// (tests/interop/test_identity_provider.py): the npm package `oidc-provider`
// (OpenID Certified), run with keys the tests generate, so sezzlee's
// discovery, JWKS refresh, rotation, outage and rate-limit handling meet a
// provider it was not written alongside, and the official Python MCP SDK
// completes a real client-credentials grant against it.
//
// Subcommands (run with Node 22; SEZZLEE_NODE_MODULES names the node_modules
// folder holding oidc-provider, as tests/interop/run.sh installs it):
//
//   node provider.mjs keys FILE KID [ES256|RS256]
//       Writes a private JWK Set holding one new key (kid KID) to FILE.
//   node provider.mjs sign FILE CLAIMS_JSON KID...
//       Prints one compact JWS of CLAIMS_JSON per KID, each signed with
//       FILE's first key but naming KID: forged tokens, as an attacker whose
//       key the provider does not publish would make them.
//   node provider.mjs serve --port PORT --keys FILE --resource URL [--signer FILE]
//       Runs the provider at issuer http://127.0.0.1:PORT with FILE's keys
//       (restart it with another FILE to rotate). Access tokens for URL (the
//       default resource) are JWTs signed with the first key, `aud` URL; it
//       also issues them for one other API, https://other-api.example/, so a
//       test can present a genuine token meant for someone else. Clients,
//       all client_credentials only:
//         agent / agent-secret   may be granted orders:read orders:admin
//         reader / reader-secret may be granted orders:read
//         signer (with --signer: private_key_jwt, RFC 7523, with the public
//           key of that private JWK Set) may be granted orders:read
//       A scope the client may not have is left out of the token, as
//       identity providers do. GET /_test/counts answers
//       {"jwks": N, "discovery": N}: how often the key set and the discovery
//       document were requested since this process started. Prints
//       "ready ISSUER" on stdout once listening; exits on SIGTERM.

import {
  createPrivateKey, createPublicKey, generateKeyPairSync, sign,
} from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

const CLIENTS = {
  agent: { secret: 'agent-secret', scope: 'orders:read orders:admin' },
  reader: { secret: 'reader-secret', scope: 'orders:read' },
  signer: { scope: 'orders:read' },
};

const OTHER_RESOURCE = 'https://other-api.example/';

const b64url = (bytes) => Buffer.from(bytes).toString('base64url');

function generateKey(kid, alg) {
  const { privateKey } = alg === 'RS256'
    ? generateKeyPairSync('rsa', { modulusLength: 2048 })
    : generateKeyPairSync('ec', { namedCurve: 'P-256' });
  return { ...privateKey.export({ format: 'jwk' }), kid, alg, use: 'sig' };
}

function publicJwk(jwk) {
  const key = createPublicKey(createPrivateKey({ key: jwk, format: 'jwk' }));
  return { ...key.export({ format: 'jwk' }), kid: jwk.kid, alg: jwk.alg, use: 'sig' };
}

function signJws(jwk, kid, claims) {
  const key = createPrivateKey({ key: jwk, format: 'jwk' });
  const header = { alg: jwk.alg, typ: 'JWT', kid };
  const input = `${b64url(JSON.stringify(header))}.${b64url(JSON.stringify(claims))}`;
  const signature = jwk.alg === 'RS256'
    ? sign('sha256', Buffer.from(input), key)
    : sign('sha256', Buffer.from(input), { key, dsaEncoding: 'ieee-p1363' });
  return `${input}.${b64url(signature)}`;
}

async function loadProvider() {
  const modules = process.env.SEZZLEE_NODE_MODULES;
  if (!modules) {
    throw new Error('SEZZLEE_NODE_MODULES must name the node_modules folder holding oidc-provider');
  }
  // The package lives under target/, not beside this file, so resolve it
  // from there (ESM imports ignore NODE_PATH).
  const require = createRequire(join(modules, 'resolve-from-here.js'));
  const { default: Provider, errors } = await import(pathToFileURL(require.resolve('oidc-provider')).href);
  return { Provider, errors };
}

async function serve(argv) {
  const { values } = parseArgs({
    args: argv,
    options: {
      port: { type: 'string' },
      keys: { type: 'string' },
      resource: { type: 'string' },
      signer: { type: 'string' },
    },
  });
  if (!values.port || !values.keys || !values.resource) {
    throw new Error('serve needs --port, --keys and --resource');
  }
  const { Provider, errors } = await loadProvider();
  const jwks = JSON.parse(readFileSync(values.keys, 'utf8'));
  const issuer = `http://127.0.0.1:${values.port}`;
  const resource = values.resource;
  const alg = jwks.keys[0].alg;
  const clients = ['agent', 'reader'].map((id) => ({
    client_id: id,
    client_secret: CLIENTS[id].secret,
    token_endpoint_auth_method: 'client_secret_basic',
  }));
  if (values.signer) {
    const [signer] = JSON.parse(readFileSync(values.signer, 'utf8')).keys;
    clients.push({
      client_id: 'signer',
      token_endpoint_auth_method: 'private_key_jwt',
      token_endpoint_auth_signing_alg: signer.alg,
      jwks: { keys: [publicJwk(signer)] },
    });
  }

  const provider = new Provider(issuer, {
    jwks,
    clients: clients.map((client) => ({
      ...client,
      grant_types: ['client_credentials'],
      response_types: [],
      redirect_uris: [],
      // No ID tokens are issued here, but the client must name an algorithm
      // the key set can sign with (the default, RS256, needs an RSA key).
      id_token_signed_response_alg: alg,
    })),
    clientAuthMethods: ['client_secret_basic', 'client_secret_post', 'private_key_jwt'],
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      introspection: { enabled: false },
      revocation: { enabled: false },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => resource,
        getResourceServerInfo: (ctx, indicator, client) => {
          if (indicator !== resource && indicator !== OTHER_RESOURCE) {
            throw new errors.InvalidTarget(`unknown resource ${indicator}`);
          }
          return {
            scope: CLIENTS[client.clientId].scope,
            audience: indicator,
            accessTokenTTL: 600,
            accessTokenFormat: 'jwt',
            jwt: { sign: { alg } },
          };
        },
      },
    },
    // Fixed cookie keys: nothing here uses cookies, this only silences the
    // development-keys warning.
    cookies: { keys: ['interop-tests-only'] },
  });
  provider.proxy = false;

  const counts = { jwks: 0, discovery: 0 };
  provider.use(async (ctx, next) => {
    if (ctx.path === '/_test/counts') {
      ctx.body = counts;
      return;
    }
    if (ctx.path === '/jwks') counts.jwks += 1;
    if (ctx.path === '/.well-known/openid-configuration') counts.discovery += 1;
    await next();
  });

  const server = provider.listen(Number(values.port), '127.0.0.1', () => {
    process.stdout.write(`ready ${issuer}\n`);
  });
  server.on('error', (error) => {
    process.stderr.write(`cannot listen on ${issuer}: ${error.message}\n`);
    process.exit(1);
  });
  const stop = () => {
    server.closeAllConnections?.();
    server.close(() => process.exit(0));
    setTimeout(() => process.exit(0), 1000).unref();
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

const [command, ...rest] = process.argv.slice(2);
switch (command) {
  case 'keys': {
    const [file, kid, alg = 'ES256'] = rest;
    if (!file || !kid || !['ES256', 'RS256'].includes(alg)) {
      throw new Error('usage: provider.mjs keys FILE KID [ES256|RS256]');
    }
    writeFileSync(file, `${JSON.stringify({ keys: [generateKey(kid, alg)] })}\n`, { mode: 0o600 });
    break;
  }
  case 'sign': {
    const [file, claims, ...kids] = rest;
    if (!file || !claims || !kids.length) {
      throw new Error('usage: provider.mjs sign FILE CLAIMS_JSON KID...');
    }
    const [jwk] = JSON.parse(readFileSync(file, 'utf8')).keys;
    const parsed = JSON.parse(claims);
    process.stdout.write(kids.map((kid) => `${signJws(jwk, kid, parsed)}\n`).join(''));
    break;
  }
  case 'serve':
    await serve(rest);
    break;
  default:
    throw new Error('usage: provider.mjs keys|sign|serve …');
}
