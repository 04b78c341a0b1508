// An OpenID provider for TestHubOAuthResource: panva's oidc-provider
// (OpenID Certified), on 127.0.0.1 with a port of its own choosing.
//
//   node provider.mjs NODE_MODULES_DIR AGENT_JWK
//
// It prints "issuer http://127.0.0.1:PORT" on stdout once it listens,
// and serves until its stdin closes. Clients (client_credentials, secret
// "<id>-secret"): "agent" gets JWT access tokens, "agent-opaque" opaque
// ones; "agent-jwt" authenticates with a JWT signed by the key whose
// public JWK is AGENT_JWK (private_key_jwt) and gets JWTs; "hub" may
// introspect. A token request must name its resource (RFC 8707); every
// resource is accepted, so the test can ask for a token for another one.
// "alice" and "bob" are two users' clients (JWTs).
//
// Token exchange (RFC 8693): oidc-provider has no grant for it, so this
// script registers one through its registerGrantType API. A client
// allowed it ("hub-exchange") trades an access token this provider
// issued (a JWT it verifies with its own key) for one to the resource it
// names, with the same subject and an act claim naming the client.
import { createServer } from 'node:http';
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const [modules, agentJWK] = process.argv.slice(2);
if (!modules || !agentJWK) {
  console.error('usage: node provider.mjs NODE_MODULES_DIR AGENT_JWK');
  process.exit(2);
}
const { default: Provider } = await import(pathToFileURL(join(modules, 'oidc-provider', 'lib', 'index.js')));
const { SignJWT, jwtVerify, importJWK } = await import(pathToFileURL(join(modules, 'jose', 'dist', 'webapi', 'index.js')));

const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const jwk = { ...privateKey.export({ format: 'jwk' }), kid: 'e2e-1', alg: 'ES256', use: 'sig' };
const scope = 'mcp:small mcp:all';
const signKey = await importJWK(jwk, 'ES256');
const verifyKey = await importJWK({ kty: jwk.kty, crv: jwk.crv, x: jwk.x, y: jwk.y }, 'ES256');
const tokenExchange = 'urn:ietf:params:oauth:grant-type:token-exchange';
const accessTokenType = 'urn:ietf:params:oauth:token-type:access_token';

const server = createServer();
server.listen(0, '127.0.0.1', () => {
  const issuer = `http://127.0.0.1:${server.address().port}`;
  const client = (id) => ({
    client_id: id, client_secret: `${id}-secret`, grant_types: ['client_credentials'],
    redirect_uris: [], response_types: [], scope, id_token_signed_response_alg: 'ES256',
  });
  const provider = new Provider(issuer, {
    clients: [client('agent'), client('agent-opaque'), client('alice'), client('bob'), { ...client('hub'), grant_types: [], scope: undefined },
      { ...client('hub-exchange'), grant_types: [tokenExchange], token_endpoint_auth_method: 'client_secret_post' },
      { ...client('agent-jwt'), client_secret: undefined, token_endpoint_auth_method: 'private_key_jwt',
        token_endpoint_auth_signing_alg: 'ES256', jwks: { keys: [JSON.parse(agentJWK)] } }],
    jwks: { keys: [jwk] },
    scopes: scope.split(' '),
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      introspection: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => undefined,
        useGrantedResource: () => true,
        getResourceServerInfo: (ctx, resource, c) => ({
          scope,
          audience: resource,
          accessTokenTTL: 300,
          accessTokenFormat: c.clientId === 'agent-opaque' ? 'opaque' : 'jwt',
          jwt: { sign: { alg: 'ES256' } },
        }),
      },
    },
  });
  provider.registerGrantType(tokenExchange, async (ctx) => {
    const p = ctx.oidc.params;
    const refuse = (error, description) => {
      ctx.status = 400;
      ctx.body = { error, error_description: description };
    };
    if (p.subject_token_type !== accessTokenType) {
      return refuse('invalid_request', 'subject_token_type must be ' + accessTokenType);
    }
    if (!p.resource) {
      return refuse('invalid_target', 'resource is required');
    }
    let claims;
    try {
      ({ payload: claims } = await jwtVerify(p.subject_token, verifyKey, { issuer }));
    } catch (e) {
      return refuse('invalid_grant', 'subject_token: ' + e.message);
    }
    const now = Math.floor(Date.now() / 1000);
    const token = await new SignJWT({ client_id: ctx.oidc.client.clientId, scope: claims.scope, act: { sub: ctx.oidc.client.clientId } })
      .setProtectedHeader({ alg: 'ES256', kid: jwk.kid, typ: 'at+jwt' })
      .setIssuer(issuer).setAudience(p.resource).setSubject(claims.sub || claims.client_id)
      .setIssuedAt(now).setExpirationTime(now + 300).setJti(randomUUID())
      .sign(signKey);
    ctx.body = { access_token: token, issued_token_type: accessTokenType, token_type: 'Bearer', expires_in: 300 };
  }, ['subject_token', 'subject_token_type', 'resource', 'audience', 'scope', 'requested_token_type', 'actor_token', 'actor_token_type']);
  server.on('request', provider.callback());
  console.log(`issuer ${issuer}`);
});
process.stdin.resume();
process.stdin.on('end', () => server.close(() => process.exit(0)));
