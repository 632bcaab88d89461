// Who a player is: the configured claim (default `sub`) of an access token from their OpenID Connect provider, checked
// like Entitlement's JWT callers (shared/auth/jwt.ts). A refusal is the same 401 `WWW-Authenticate` answer, counted
// in notification_player_auth_refusals_total.
import { bearerToken, looksLikeJwt } from "../../shared/auth/guard.ts";
import type { KeySource } from "../../shared/auth/jwks.ts";
import { claimText, createJwtCheck } from "../../shared/auth/jwt.ts";
import type { JwtTrust } from "../../shared/auth/jwt-config.ts";
import { type Refusal, refusalError } from "../../shared/auth/refusal.ts";

/** A verified player: their user_id and when their token (and so each of their streams) ends. */
export type Player = { userId: string; expiresAtMs: number };

/** The player of an `Authorization` header; throws the refusal's HTTP error. */
export type PlayerAuthenticator = (authorization: string | null) => Promise<Player>;

export function createPlayerAuthenticator(
  trust: JwtTrust & { userClaim: string },
  keys: KeySource,
  onRefusal: (refusal: Refusal) => void,
  wallClock: () => number = Date.now,
): PlayerAuthenticator {
  const check = createJwtCheck(
    trust,
    keys,
    (payload, expiresAtMs) => {
      const userId = claimText(payload, trust.userClaim);
      return userId === undefined || userId.length > 128 ? undefined : { userId, expiresAtMs };
    },
    wallClock,
  );
  return async (authorization) => {
    const token = bearerToken(authorization);
    const verdict: Player | Refusal =
      token === undefined
        ? { refused: "missing" }
        : looksLikeJwt(token)
          ? await check(token)
          : { refused: "malformed" };
    if ("refused" in verdict) {
      onRefusal(verdict);
      throw refusalError(verdict);
    }
    return verdict;
  };
}
