// The settings `bun run stack` gives the services, and what it prints about each: every one it sets is shown with why;
// where the user's own environment has a value, that value wins, is joined with the stack's (token lists), or is
// replaced, and the line says which and why. Nothing is set silently.
import { tokenEntryLine } from "../src/shared/auth/tokens.ts";

/** How a setting meets a value of the same name in the user's environment. */
export type Yours = "wins" | "joined" | { replaced: string };

export type StackSetting = { value: string; why: string; yours: Yours };

const SECRET_NAME = /SECRET|TOKEN|PASSWORD|KEY|CREDENTIALS/;
/** A value as printed: secrets hidden, a URL's password hidden. */
export function shownValue(name: string, value: string): string {
  if (SECRET_NAME.test(name)) return "***";
  try {
    const url = new URL(value);
    if (url.password) url.password = "***";
    return url.password ? url.toString() : value;
  } catch {
    return value;
  }
}

/** One setting's value and its line: the stack's, or the user's, or both joined. */
function settle(name: string, setting: StackSetting, given: string | undefined): { value: string; line: string } {
  const ours = `${name}=${shownValue(name, setting.value)}`;
  if (given === undefined || given === "") return { value: setting.value, line: `${ours}  (${setting.why})` };
  if (given === setting.value) return { value: given, line: `${ours}  (yours, the same: ${setting.why})` };
  if (setting.yours === "wins") {
    const theirs = `${name}=${shownValue(name, given)}`;
    return {
      value: given,
      line: `${theirs}  (yours; the stack would set ${shownValue(name, setting.value)}: ${setting.why})`,
    };
  }
  if (setting.yours === "joined") {
    return { value: `${given},${setting.value}`, line: `${name}=yours + the stack's entry  (${setting.why})` };
  }
  return { value: setting.value, line: `${ours}  (replaces yours: ${setting.yours.replaced})` };
}

/** The environment a service gets from `settings`, and one line per setting for the terminal. */
export function settleSettings(
  settings: Record<string, StackSetting>,
  env: Record<string, string | undefined>,
): { env: Record<string, string>; lines: string[] } {
  const out: Record<string, string> = {};
  const lines: string[] = [];
  for (const [name, setting] of Object.entries(settings)) {
    const { value, line } = settle(name, setting, env[name]);
    out[name] = value;
    lines.push(line);
  }
  return { env: out, lines };
}

const own = (value: string, why: string, replaced: string): StackSetting => ({ value, why, yours: { replaced } });

/** What both services get: the stack's database and NATS, a port on this machine only, the stack's stream names. */
export function commonStackSettings(s: {
  databaseUrl: string;
  natsUrl: string;
  port: number;
  nats: Record<string, string>;
}): Record<string, StackSetting> {
  const streams = "the stack's streams are its own (STACK_NATS_PREFIX names others)";
  return {
    DATABASE_URL: own(s.databaseUrl, "the stack's database", "the stack's state is a database of its own"),
    NATS_URL: own(s.natsUrl, "the NATS the stack uses", "nothing answered there: the stack started its own"),
    PORT: own(String(s.port), "the port the stack picked", "the stack picks 8080 and 8081, or free ports"),
    HOST: own("127.0.0.1", "this machine only", "the stack's tokens and demo issuer are for this machine only"),
    ...Object.fromEntries(
      Object.entries(s.nats).map(([name, value]) => [name, own(value, "the stack's streams", streams)]),
    ),
  };
}

/** Entitlement's settings beyond `common`: the API token is added to yours, authentication stays on unless you say. */
export function entitlementStackSettings(
  common: Record<string, StackSetting>,
  apiToken: string,
): Record<string, StackSetting> {
  return {
    ...common,
    ENTITLEMENT_AUTH_TOKENS: {
      value: tokenEntryLine("stack", apiToken, "read+write"),
      why: "the API token below",
      yours: "joined",
    },
    ENTITLEMENT_AUTH_DISABLED: { value: "false", why: "the printed curls send the API token", yours: "wins" },
  };
}

/** Notification's settings beyond `common`: the debug inbox, the admin API, the players' issuer, the endpoints. */
export function notificationStackSettings(
  common: Record<string, StackSetting>,
  s: {
    debugToken: string;
    adminToken: string;
    notifyToken: string;
    issuer: { issuer: string; audience: string };
    secretKey: string;
    pageOrigin: string;
    /** The stack's VAPID pair; undefined when your environment brings a key of its own. */
    vapid: { publicKey: string; privateKey: string } | undefined;
  },
): Record<string, StackSetting> {
  const demoIssuer = "PLAYER_TOKEN is signed by the stack's demo issuer, which another issuer's settings would refuse";
  return {
    ...common,
    NOTIFICATION_DEBUG_API_ENABLED: { value: "true", why: "the printed debug inbox curl", yours: "wins" },
    NOTIFICATION_DEBUG_API_TOKEN: { value: s.debugToken, why: "the debug token below", yours: "wins" },
    NOTIFICATION_PLAYER_JWT_ISSUER: { value: s.issuer.issuer, why: "the demo issuer", yours: { replaced: demoIssuer } },
    NOTIFICATION_PLAYER_JWT_AUDIENCE: {
      value: s.issuer.audience,
      why: "the demo issuer",
      yours: { replaced: demoIssuer },
    },
    NOTIFICATION_AUTH_TOKENS: {
      value: `${tokenEntryLine("stack", s.adminToken, "read+write")},${tokenEntryLine("stack-game", s.notifyToken, "notify")}`,
      why: "the admin and notify tokens below",
      yours: "joined",
    },
    NOTIFICATION_PLAYER_CORS_ORIGINS: {
      value: s.pageOrigin,
      why: "the player page the stack serves on an origin of its own",
      yours: "joined",
    },
    NOTIFICATION_ENDPOINT_SECRET_KEY: {
      value: s.secretKey,
      why: "kept in the stack's data folder, so endpoints outlive a run",
      yours: "wins",
    },
    NOTIFICATION_ENDPOINT_ALLOW_PRIVATE: {
      value: "true",
      why: "the demo receiver listens on 127.0.0.1, which endpoints may not reach otherwise; never in production",
      yours: "wins",
    },
    ...(s.vapid ? webPushSettings(s.vapid) : {}),
  };
}

/**
 * Web Push on, with the stack's VAPID pair (kept in its data folder). Only when your environment has neither VAPID key
 * (stack.ts): a key of yours is never paired with the stack's other half, and a pair of yours reaches the service as
 * it is (with one key missing, Notification's own check says which).
 */
function webPushSettings(vapid: { publicKey: string; privateKey: string }): Record<string, StackSetting> {
  const kept = "the stack's VAPID pair, kept in its data folder so browser subscriptions outlive a run";
  return {
    NOTIFICATION_WEBPUSH_VAPID_PUBLIC_KEY: { value: vapid.publicKey, why: kept, yours: "wins" },
    NOTIFICATION_WEBPUSH_VAPID_PRIVATE_KEY: { value: vapid.privateKey, why: kept, yours: "wins" },
    NOTIFICATION_WEBPUSH_SUBJECT: {
      value: "mailto:stack@localhost",
      why: "the VAPID subject push services see; set your own address for a real browser's push service",
      yours: "wins",
    },
  };
}

export function printSettings(service: string, lines: string[]): void {
  console.log(`${service} gets (your own value wins where the line says "yours"):`);
  for (const line of lines) console.log(`  ${line}`);
}
