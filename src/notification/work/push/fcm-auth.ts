// FCM's OAuth 2.0 access token from a service account key file: a JWT assertion signed RS256 with the account's key
// (jose), exchanged at the file's token_uri (the JWT-bearer grant, RFC 7523), and reused until shortly before it
// expires. One exchange at a time: pushes that need a token while one is being fetched wait for that one.
import { importPKCS8, SignJWT } from "jose";
import type { ServiceAccount } from "../../features/push/service-account.ts";

export const FCM_SCOPE = "https://www.googleapis.com/auth/firebase.messaging";

/** Seconds before its end that a token is no longer handed out, so a push never carries one about to expire. */
const RENEW_BEFORE_S = 60;
/** The assertion's lifetime; Google accepts at most an hour. */
const ASSERTION_LIFETIME_S = 3600;

export type AccessTokens = {
  /** A valid access token, fetched when none is kept or the kept one nears its end. */
  get: () => Promise<string>;
  /** Forgets the kept token (the push service refused it): the next `get` fetches another. */
  forget: (token: string) => void;
};

export function createFcmAccessTokens(deps: {
  account: ServiceAccount;
  now: () => Date;
  timeoutMs: number;
}): AccessTokens {
  const key = importPKCS8(deps.account.privateKey, "RS256");
  let kept: { token: string; renewAt: number } | undefined;
  let fetching: Promise<string> | undefined;
  const fetchToken = async (): Promise<string> => {
    const nowS = Math.floor(deps.now().getTime() / 1000);
    const assertion = await new SignJWT({ scope: FCM_SCOPE })
      .setProtectedHeader({
        alg: "RS256",
        typ: "JWT",
        ...(deps.account.privateKeyId ? { kid: deps.account.privateKeyId } : {}),
      })
      .setIssuer(deps.account.clientEmail)
      .setAudience(deps.account.tokenUri)
      .setIssuedAt(nowS)
      .setExpirationTime(nowS + ASSERTION_LIFETIME_S)
      .sign(await key);
    const answer = await fetch(deps.account.tokenUri, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ grant_type: "urn:ietf:params:oauth:grant-type:jwt-bearer", assertion }),
      signal: AbortSignal.timeout(deps.timeoutMs),
    });
    if (!answer.ok) throw new Error(`the token endpoint answered ${answer.status}`);
    const body = (await answer.json()) as { access_token?: unknown; expires_in?: unknown };
    if (typeof body.access_token !== "string") throw new Error("the token endpoint gave no access_token");
    const lifetime = typeof body.expires_in === "number" ? body.expires_in : 3600;
    kept = { token: body.access_token, renewAt: nowS + lifetime - RENEW_BEFORE_S };
    return body.access_token;
  };
  return {
    get: () => {
      if (kept && kept.renewAt > deps.now().getTime() / 1000) return Promise.resolve(kept.token);
      fetching ??= fetchToken().finally(() => {
        fetching = undefined;
      });
      return fetching;
    },
    forget: (token) => {
      if (kept?.token === token) kept = undefined;
    },
  };
}
