// A stand-in for the players' OpenID Connect provider, for `bun run stack` only: a signing key made for this run, its
// discovery document and key set on a loopback port, and access tokens for the demo user, so that the players' inbox
// and live stream (and docs/examples/player.html) can be tried without an identity provider. Never for production:
// whoever runs the stack can sign any player's token.
import { exportJWK, generateKeyPair, SignJWT } from "jose";

export type DemoIssuer = {
  issuer: string;
  audience: string;
  /** An access token for `userId` (its `sub`), valid for `hours`. */
  tokenFor: (userId: string, hours: number) => Promise<string>;
  stop: () => void;
};

const AUDIENCE = "stack-players";
const KID = "stack-1";

export async function startDemoIssuer(): Promise<DemoIssuer> {
  const { privateKey, publicKey } = await generateKeyPair("ES256");
  const jwk = { ...(await exportJWK(publicKey)), kid: KID, alg: "ES256", use: "sig" };
  let issuer = "";
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: (request) => {
      const path = new URL(request.url).pathname;
      if (path === "/.well-known/openid-configuration") return Response.json({ issuer, jwks_uri: `${issuer}/jwks` });
      if (path === "/jwks") return Response.json({ keys: [jwk] });
      return new Response("not found", { status: 404 });
    },
  });
  issuer = `http://127.0.0.1:${server.port}`;
  return {
    issuer,
    audience: AUDIENCE,
    tokenFor: (userId, hours) =>
      new SignJWT({})
        .setProtectedHeader({ alg: "ES256", kid: KID, typ: "at+jwt" })
        .setIssuer(issuer)
        .setAudience(AUDIENCE)
        .setSubject(userId)
        .setIssuedAt()
        .setExpirationTime(`${hours}h`)
        .sign(privateKey),
    stop: () => void server.stop(true),
  };
}
