// A real OpenID Connect provider (the `oidc-provider` package, in this process) on an ephemeral port of 127.0.0.1:
// clients get JWT access tokens for the service's audience with the client-credentials grant, as a payment system
// gets them from Keycloak. The test holds the signing keys, so it can also forge tokens the provider would never
// issue (each failing one check), rotate the keys, and take the provider down.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { exportJWK, type JWK, type JWTPayload, SignJWT } from "jose";
import Provider from "oidc-provider";
import { newSigningKey, type SigningKey } from "./signing-key.ts";

export { newSigningKey, type SigningKey };

export const IDP_AUDIENCE = "https://entitlement.test";
export const READ_SCOPE = "entitlements.read";
export const WRITE_SCOPE = "entitlements.write";

export type IdpClient = { id: string; secret: string; scope: string };
/** A writer and a reader, as a payment system and a reporting job would be registered. */
export const CLIENTS: Record<"payments" | "reports", IdpClient> = {
  payments: { id: "payments", secret: "payments-secret-0123456789", scope: `${READ_SCOPE} ${WRITE_SCOPE}` },
  reports: { id: "reports", secret: "reports-secret-0123456789", scope: READ_SCOPE },
};

function createProvider(issuer: string, key: SigningKey, privateJwk: JWK) {
  const provider = new Provider(issuer, {
    clients: Object.values(CLIENTS).map((c) => ({
      client_id: c.id,
      client_secret: c.secret,
      grant_types: ["client_credentials"],
      redirect_uris: [],
      response_types: [],
      scope: c.scope,
    })),
    jwks: { keys: [{ ...privateJwk, kid: key.kid, alg: key.alg, use: "sig" }] },
    scopes: [READ_SCOPE, WRITE_SCOPE],
    ttl: { ClientCredentials: 600 },
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      // Resource indicators make the access token a JWT whose `aud` is the resource (RFC 8707, RFC 9068).
      resourceIndicators: {
        enabled: true,
        defaultResource: () => IDP_AUDIENCE,
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx: unknown, resource: string) => ({
          scope: `${READ_SCOPE} ${WRITE_SCOPE}`,
          audience: resource,
          accessTokenFormat: "jwt",
          jwt: { sign: { alg: key.alg } },
        }),
      },
    },
  });
  return provider;
}

export type TestIdp = {
  issuer: string;
  /** The current signing key (the provider publishes only it). */
  key: () => SigningKey;
  /** A client-credentials access token from the token endpoint. */
  token: (client: IdpClient, options?: { scope?: string; resource?: string }) => Promise<string>;
  /** A token signed with the current key (or `key`), with any header and claims: what the provider never issues. */
  forge: (claims: JWTPayload, options?: { header?: Record<string, unknown>; key?: SigningKey }) => Promise<string>;
  /** Claims of a token the provider would issue to `payments`, for forging variations of it. */
  claims: () => JWTPayload;
  /** A new key replaces the old one (the provider restarts with it); tokens signed with the old key stay valid. */
  rotate: (kid: string) => Promise<SigningKey>;
  /** down(): every connection is dropped (the provider is unreachable); up() restores it. */
  down: () => void;
  up: () => void;
  /** Requests for the key set served so far. */
  jwksFetches: () => number;
  close: () => Promise<void>;
};

/** A client-credentials access token from `issuer`'s token endpoint; its refusal is thrown with its status. */
async function requestToken(
  issuer: string,
  client: IdpClient,
  options: { scope?: string; resource?: string },
): Promise<string> {
  const body = new URLSearchParams({ grant_type: "client_credentials", scope: options.scope ?? client.scope });
  body.set("resource", options.resource ?? IDP_AUDIENCE);
  const response = await fetch(`${issuer}/token`, {
    method: "POST",
    headers: { authorization: `Basic ${btoa(`${client.id}:${client.secret}`)}` },
    body,
  });
  const json = (await response.json()) as { access_token?: string; error?: string };
  if (!json.access_token) throw new Error(`the test IdP refused a token: ${response.status} ${json.error}`);
  return json.access_token;
}

export async function startTestIdp(): Promise<TestIdp> {
  let handler: (req: IncomingMessage, res: ServerResponse) => void = (_req, res) => res.end();
  let reachable = true;
  let jwksFetches = 0;
  const server = createServer((req, res) => {
    if (!reachable) return void req.socket.destroy();
    if (req.url?.startsWith("/jwks")) jwksFetches += 1;
    handler(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  let current = await newSigningKey("key-1");
  const install = async (key: SigningKey) => {
    const provider = createProvider(issuer, key, await exportJWK(key.privateKey));
    handler = provider.callback() as typeof handler;
    current = key;
  };
  await install(current);

  const claims = (): JWTPayload => {
    const now = Math.floor(Date.now() / 1000);
    return { iss: issuer, aud: IDP_AUDIENCE, iat: now, exp: now + 300, client_id: "payments", sub: "payments" };
  };
  return {
    issuer,
    key: () => current,
    claims,
    token: (client, options = {}) => requestToken(issuer, client, options),
    forge: (payload, options = {}) => {
      const key = options.key ?? current;
      return new SignJWT(payload)
        .setProtectedHeader({ alg: key.alg, kid: key.kid, typ: "at+jwt", ...options.header })
        .sign(key.privateKey);
    },
    rotate: async (kid) => {
      await install(await newSigningKey(kid));
      return current;
    },
    down: () => {
      reachable = false;
      server.closeAllConnections();
    },
    up: () => {
      reachable = true;
    },
    jwksFetches: () => jwksFetches,
    close: async () => {
      reachable = false;
      server.close();
      server.closeAllConnections();
    },
  };
}
