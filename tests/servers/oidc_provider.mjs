// A real OpenID provider for Quiver's sign-in tests: oidc-provider (an OpenID
// certified implementation) on 127.0.0.1 at a free port. It prints its issuer on
// one line once it listens; tests/oidc.py starts it and reads that line.
//
// argv[2] is a JSON file: {"clients": [...], "accounts_file": "..."}. The
// accounts file maps each login to its claims ({"groups": [...], "email": ...})
// and is read again at every lookup, so a test changes a person's groups at the
// provider by rewriting it. The dev interactions are the login form (any
// password); consent is given once per client, as a company's provider does for
// its own applications. PKCE is required of every client.
//
// An account may carry "tamper": the ID token the token endpoint answers for it
// is then re-signed with a claim changed ("issuer", "audience", "expired") or
// signed by another key under the provider's key id ("signature"): what a
// relying party must refuse.
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import http from "node:http";

import * as jose from "jose";
import Provider from "oidc-provider";

const config = JSON.parse(readFileSync(process.argv[2], "utf8"));
const readAccounts = () => JSON.parse(readFileSync(config.accounts_file, "utf8"));

const ALG = "RS256";
const KID = "quiver-tests";

async function signingKey() {
  const { privateKey } = await jose.generateKeyPair(ALG, { extractable: true });
  return { key: privateKey, jwk: { ...(await jose.exportJWK(privateKey)), kid: KID, alg: ALG, use: "sig" } };
}

async function findAccount(_ctx, sub) {
  const account = readAccounts()[sub];
  if (!account) return undefined;
  return {
    accountId: sub,
    async claims() {
      return {
        sub,
        email: account.email,
        email_verified: account.email_verified ?? true,
        name: account.name ?? sub,
        preferred_username: account.preferred_username ?? sub,
        groups: account.groups ?? [],
      };
    },
  };
}

// Consent for the company's own applications is given once, here: a grant for
// what the client asked.
async function loadExistingGrant(ctx) {
  const { oidc } = ctx;
  const grantId = oidc.result?.consent?.grantId || oidc.session.grantIdFor(oidc.client.clientId);
  if (grantId) return oidc.provider.Grant.find(grantId);
  const grant = new oidc.provider.Grant({ clientId: oidc.client.clientId, accountId: oidc.session.accountId });
  grant.addOIDCScope(oidc.params.scope);
  await grant.save();
  return grant;
}

function tamperedClaims(claims, how, issuer) {
  const now = Math.floor(Date.now() / 1000);
  switch (how) {
    case "issuer":
      return { ...claims, iss: `${issuer}/another-tenant` };
    case "audience":
      // For another application, naming Quiver as its authorized party.
      return { ...claims, aud: "another-application", azp: claims.aud };
    case "expired":
      return { ...claims, iat: now - 1200, exp: now - 600 };
    default:
      return claims;
  }
}

async function tampered(idToken, how, issuer, own) {
  const claims = jose.decodeJwt(idToken);
  const key = how === "signature" ? (await signingKey()).key : own;
  return new jose.SignJWT(tamperedClaims(claims, how, issuer))
    .setProtectedHeader({ alg: ALG, kid: KID, typ: "JWT" })
    .sign(key);
}

const own = await signingKey();
const server = http.createServer();
server.listen(0, "127.0.0.1", () => {
  const issuer = `http://127.0.0.1:${server.address().port}`;
  const provider = new Provider(issuer, {
    clients: config.clients,
    jwks: { keys: [own.jwk] },
    cookies: { keys: [randomBytes(32).toString("hex")] },
    pkce: { required: () => true },
    claims: {
      openid: ["sub"],
      email: ["email", "email_verified"],
      profile: ["name", "preferred_username"],
      groups: ["groups"],
    },
    findAccount,
    loadExistingGrant,
    features: { devInteractions: { enabled: true } },
  });
  provider.use(async (ctx, next) => {
    await next();
    const body = ctx.body;
    if (ctx.path !== "/token" || ctx.status !== 200 || !body?.id_token) return;
    const how = readAccounts()[jose.decodeJwt(body.id_token).sub]?.tamper;
    if (how) ctx.body = { ...body, id_token: await tampered(body.id_token, how, issuer, own.key) };
  });
  server.on("request", provider.callback());
  process.stdout.write(`${issuer}\n`);
});

process.on("SIGTERM", () => server.close(() => process.exit(0)));
