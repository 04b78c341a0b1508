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
import { createServer } from 'node:http';
import { generateKeyPairSync } from 'node:crypto';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const [modules, agentJWK] = process.argv.slice(2);
if (!modules || !agentJWK) {
  console.error('usage: node provider.mjs NODE_MODULES_DIR AGENT_JWK');
  process.exit(2);
}
const { default: Provider } = await import(pathToFileURL(join(modules, 'oidc-provider', 'lib', 'index.js')));

const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const jwk = { ...privateKey.export({ format: 'jwk' }), kid: 'e2e-1', alg: 'ES256', use: 'sig' };
const scope = 'mcp:small mcp:all';

const server = createServer();
server.listen(0, '127.0.0.1', () => {
  const issuer = `http://127.0.0.1:${server.address().port}`;
  const client = (id) => ({
    client_id: id, client_secret: `${id}-secret`, grant_types: ['client_credentials'],
    redirect_uris: [], response_types: [], scope, id_token_signed_response_alg: 'ES256',
  });
  const provider = new Provider(issuer, {
    clients: [client('agent'), client('agent-opaque'), client('alice'), client('bob'), { ...client('hub'), grant_types: [], scope: undefined },
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
  server.on('request', provider.callback());
  console.log(`issuer ${issuer}`);
});
process.stdin.resume();
process.stdin.on('end', () => server.close(() => process.exit(0)));
