// The players' variables: whose access tokens are trusted (the same checks as Entitlement's JWT callers), which claim
// names the player, and the bounds of the live streams. Spread into NotificationEnv (config.ts).

import {
  type JwtTrust,
  type JwtTrustValues,
  jwtTrust,
  jwtTrustRules,
  jwtTrustVariables,
} from "../../../shared/auth/jwt-config.ts";
import { Duration, Int, NonBlank, type Rule, Str } from "../../../shared/config.ts";

const PREFIX = "NOTIFICATION_PLAYER_JWT";

export const PlayerEnv = {
  ...jwtTrustVariables(PREFIX, "from players on the /v1/me/ routes (unset: those routes answer 404)"),
  NOTIFICATION_PLAYER_JWT_USER_CLAIM: Str("sub", {
    minLength: 1,
    pattern: "^[\\x21-\\x7e]+$",
    description: "The claim of a player's access token whose value is their user_id.",
  }),
  NOTIFICATION_STREAM_HEARTBEAT: Duration("15s", {
    minimum: 1_000,
    description: "A live stream sends a `: keep-alive` comment at least this often (proxies close silent connections).",
  }),
  NOTIFICATION_STREAM_MAX_PER_USER: Int(5, {
    minimum: 1,
    maximum: 100,
    description: "Live streams one player may hold open; one more closes their oldest.",
  }),
  NOTIFICATION_STREAM_MAX: Int(20_000, {
    minimum: 1,
    description:
      "Live streams this process holds open; beyond it a new one is refused with 503 and Retry-After. Each takes " +
      "about 9 KB of memory and one open file: the process holds at most its open-file limit (ulimit -n) less " +
      "1,000, and says so at start when that is fewer.",
  }),
  NOTIFICATION_STREAM_BUFFER_BYTES: Int(256 * 1024, {
    minimum: 4 * 1024,
    description:
      "Bytes a live stream may have waiting for its reader: it writes while there is room, then waits, so a resume " +
      "goes at the reader's pace. A stream whose buffer stays full for NOTIFICATION_STREAM_HEARTBEAT is closed (the " +
      "client resumes with Last-Event-ID), so a reader that stopped never holds memory or other streams up.",
  }),
  NOTIFICATION_STREAM_RECHECK_INTERVAL: Duration("5s", {
    minimum: 100,
    description:
      "How often the open streams compare their position with the database, in one query: a signal lost between " +
      "replicas delays an event by at most this long, it never loses it.",
  }),
  NOTIFICATION_PLAYER_NATS_SUBJECT: NonBlank("notification.players", {
    description: "Core NATS subject on which replicas tell each other which players have new notifications.",
  }),
  NOTIFICATION_PLAYER_CORS_ORIGINS: Str("", {
    description:
      "Exact origins (https://play.example.com,http://localhost:5173) whose pages may call the /v1/me/ routes from a " +
      "browser: their preflight is answered and their answers carry Access-Control-Allow-Origin. Unset: none.",
  }),
};

type PlayerValues = JwtTrustValues<typeof PREFIX> & {
  NOTIFICATION_PLAYER_JWT_USER_CLAIM: string;
  NOTIFICATION_STREAM_HEARTBEAT: number;
  NOTIFICATION_STREAM_MAX_PER_USER: number;
  NOTIFICATION_STREAM_MAX: number;
  NOTIFICATION_STREAM_BUFFER_BYTES: number;
  NOTIFICATION_STREAM_RECHECK_INTERVAL: number;
  NOTIFICATION_PLAYER_NATS_SUBJECT: string;
  NOTIFICATION_PLAYER_CORS_ORIGINS: string;
};

const corsOrigins = (text: string) =>
  text
    .split(",")
    .map((o) => o.trim())
    .filter((o) => o !== "");

/** `scheme://host[:port]` as a browser sends it in Origin: http or https, no path, no trailing slash. */
function isOrigin(text: string): boolean {
  try {
    const url = new URL(text);
    return (url.protocol === "https:" || url.protocol === "http:") && url.origin === text;
  } catch {
    return false;
  }
}

const corsOriginsAreValid: Rule<PlayerValues> = (e) => {
  const bad = corsOrigins(e.NOTIFICATION_PLAYER_CORS_ORIGINS ?? "").find((o) => !isOrigin(o));
  return bad === undefined
    ? undefined
    : `NOTIFICATION_PLAYER_CORS_ORIGINS: ${JSON.stringify(bad)} is not an origin; expected exact origins such as ` +
        "https://play.example.com,http://localhost:5173 (scheme, host and port only, comma-separated)";
};

export const playerRules = [...jwtTrustRules(PREFIX), corsOriginsAreValid] as Rule<unknown>[];

export type StreamSettings = {
  heartbeatMs: number;
  maxPerUser: number;
  max: number;
  bufferBytes: number;
  recheckMs: number;
};

export type PlayerSettings = {
  /** Undefined without an issuer: the /v1/me/ routes are not served. */
  jwt: (JwtTrust & { userClaim: string }) | undefined;
  stream: StreamSettings;
  subject: string;
  /** Origins whose pages may call /v1/me/ from a browser (CORS); empty: none. */
  corsOrigins: string[];
};

export function playerSettings(e: PlayerValues): PlayerSettings {
  const trust = jwtTrust(PREFIX, e);
  return {
    jwt: trust && { ...trust, userClaim: e.NOTIFICATION_PLAYER_JWT_USER_CLAIM },
    stream: {
      heartbeatMs: e.NOTIFICATION_STREAM_HEARTBEAT,
      maxPerUser: e.NOTIFICATION_STREAM_MAX_PER_USER,
      max: e.NOTIFICATION_STREAM_MAX,
      bufferBytes: e.NOTIFICATION_STREAM_BUFFER_BYTES,
      recheckMs: e.NOTIFICATION_STREAM_RECHECK_INTERVAL,
    },
    subject: e.NOTIFICATION_PLAYER_NATS_SUBJECT,
    corsOrigins: corsOrigins(e.NOTIFICATION_PLAYER_CORS_ORIGINS),
  };
}
