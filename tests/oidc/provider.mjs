// A certified OpenID provider (the `oidc-provider` package, pinned in .ci/run) on loopback for
// the web client's sign-in test (tests/web/oidc.rs). Its signing key is made now. It listens at
// once and prints `{"issuer": …}`; then it reads one line on stdin, the redirect URI of the
// client it is to know (chatd's callback, whose port is known only once chatd listens), and
// prints `{"ready": true}`. Its sign-in page is the package's development page: any login and
// password; the login is the subject, and a login starting with `admin` is in the group
// `chatd-admins`.
//
//   OIDC_PROVIDER_MODULE=target/oidc-node/node_modules/oidc-provider node provider.mjs

import { createServer } from 'node:http';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { createInterface } from 'node:readline';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const { default: Provider } = await import(
  pathToFileURL(join(process.env.OIDC_PROVIDER_MODULE, 'lib/index.js')).href
);

let handle = (_req, res) => {
  res.statusCode = 503;
  res.end();
};
const server = createServer((req, res) => handle(req, res));
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const issuer = `http://127.0.0.1:${server.address().port}`;
console.log(JSON.stringify({ issuer }));

const lines = createInterface({ input: process.stdin });
const redirectUri = await new Promise((resolve) => lines.once('line', resolve));

const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const jwk = { ...privateKey.export({ format: 'jwk' }), kid: 'test-key', use: 'sig', alg: 'RS256' };

const provider = new Provider(issuer, {
  clients: [
    {
      client_id: process.env.CLIENT_ID,
      client_secret: process.env.CLIENT_SECRET,
      redirect_uris: [redirectUri.trim()],
      grant_types: ['authorization_code'],
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_basic',
    },
  ],
  jwks: { keys: [jwk] },
  cookies: { keys: [randomBytes(32).toString('hex')] },
  pkce: { required: () => true },
  claims: { openid: ['sub'], profile: ['preferred_username', 'groups'] },
  // The profile claims in the ID token itself, as Keycloak and Entra ID put them there.
  conformIdTokenClaims: false,
  async findAccount(_ctx, sub) {
    return {
      accountId: sub,
      async claims() {
        return {
          sub,
          preferred_username: sub,
          groups: sub.startsWith('admin') ? ['chatd-admins'] : ['staff'],
        };
      },
    };
  },
});
// Loopback over http: the package's development pages refuse an insecure issuer otherwise.
provider.proxy = false;
handle = provider.callback();
console.log(JSON.stringify({ ready: true }));
