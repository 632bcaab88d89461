// The push variables: Web Push's VAPID keys and subject, the FCM service account and base URL, how long a push
// service keeps a push, and how many pushes run at once. Spread into NotificationEnv (config.ts). A platform without
// its keys is off: registering a device of it is 400 PLATFORM_NOT_CONFIGURED.
import { readFileSync } from "node:fs";
import { backoffPolicy, backoffVariables, Duration, Int, Optional, type Rule, Str } from "../../../shared/config.ts";
import { parseServiceAccount, type ServiceAccount } from "./service-account.ts";

const BACKOFF = "NOTIFICATION_PUSH";

export const PushVariables = {
  NOTIFICATION_WEBPUSH_VAPID_PUBLIC_KEY: Optional({
    description:
      "The VAPID public key (base64url, 65 bytes), as `bunx web-push generate-vapid-keys` prints it; browsers " +
      "subscribe with it as applicationServerKey. With the private key and subject: Web Push is on.",
  }),
  NOTIFICATION_WEBPUSH_VAPID_PRIVATE_KEY: Optional({ description: "The VAPID private key (base64url, 32 bytes)." }),
  NOTIFICATION_WEBPUSH_SUBJECT: Optional({
    description: "The VAPID `sub`: a mailto: or https: URL where push services can reach the operator.",
  }),
  NOTIFICATION_FCM_SERVICE_ACCOUNT_FILE: Optional({
    description:
      "A Google service account key file (JSON) allowed to send with Firebase Cloud Messaging: FCM is on. Its " +
      "project_id names the project; its token_uri gives the access tokens.",
  }),
  NOTIFICATION_FCM_BASE_URL: Str("https://fcm.googleapis.com", {
    pattern: "^https?://[^\\s]+$",
    description: "The FCM HTTP v1 API's base URL (an emulator or stand-in in tests).",
  }),
  NOTIFICATION_PUSH_TTL: Duration("1d", {
    minimum: 0,
    description: "How long a push service keeps a push for an offline device when its notification has no expires_at.",
  }),
  NOTIFICATION_PUSH_TIMEOUT: Duration("10s", { minimum: 100, description: "A push request's timeout." }),
  NOTIFICATION_PUSH_MAX_ATTEMPTS: Int(8, { minimum: 1, description: "Attempts of one push before it ends FAILED." }),
  ...backoffVariables(BACKOFF),
  NOTIFICATION_PUSH_BACKOFF_MAX: Duration("30m", {
    description: "Cap of the pushes' exponential backoff, before jitter.",
  }),
  NOTIFICATION_PUSH_CONCURRENCY: Int(16, {
    minimum: 1,
    maximum: 1000,
    description:
      "Pushes to one push service (one origin, or FCM) in flight at once, per process: what a hanging one holds.",
  }),
  NOTIFICATION_PUSH_MAX_IN_FLIGHT: Int(400, {
    minimum: 1,
    maximum: 10000,
    description: "Pushes in flight at once, all push services together, per process.",
  }),
};

type PushEnv = Parameters<typeof backoffPolicy<typeof BACKOFF>>[1] & {
  NOTIFICATION_WEBPUSH_VAPID_PUBLIC_KEY?: string;
  NOTIFICATION_WEBPUSH_VAPID_PRIVATE_KEY?: string;
  NOTIFICATION_WEBPUSH_SUBJECT?: string;
  NOTIFICATION_FCM_SERVICE_ACCOUNT_FILE?: string;
  NOTIFICATION_FCM_BASE_URL: string;
  NOTIFICATION_PUSH_TTL: number;
  NOTIFICATION_PUSH_TIMEOUT: number;
  NOTIFICATION_PUSH_MAX_ATTEMPTS: number;
  NOTIFICATION_PUSH_CONCURRENCY: number;
  NOTIFICATION_PUSH_MAX_IN_FLIGHT: number;
};

const VAPID = [
  "NOTIFICATION_WEBPUSH_VAPID_PUBLIC_KEY",
  "NOTIFICATION_WEBPUSH_VAPID_PRIVATE_KEY",
  "NOTIFICATION_WEBPUSH_SUBJECT",
] as const;

const bytesOf = (text: string | undefined) =>
  text && /^[A-Za-z0-9_-]+$/.test(text) ? Buffer.from(text, "base64url").length : -1;

/** All three VAPID variables or none; keys of the right length; a mailto: or https: subject. */
const vapidComplete: Rule<PushEnv> = (e) => {
  const set = VAPID.filter((name) => e[name] !== undefined && e[name] !== "");
  if (set.length === 0) return undefined;
  if (set.length < VAPID.length)
    return `${VAPID.filter((n) => !set.includes(n)).join(", ")} must be set with ${set.join(", ")}`;
  const problems: string[] = [];
  if (bytesOf(e.NOTIFICATION_WEBPUSH_VAPID_PUBLIC_KEY) !== 65)
    problems.push("NOTIFICATION_WEBPUSH_VAPID_PUBLIC_KEY must be 65 bytes in base64url (web-push generate-vapid-keys)");
  if (bytesOf(e.NOTIFICATION_WEBPUSH_VAPID_PRIVATE_KEY) !== 32)
    problems.push(
      "NOTIFICATION_WEBPUSH_VAPID_PRIVATE_KEY must be 32 bytes in base64url (web-push generate-vapid-keys)",
    );
  if (!/^(mailto:|https:\/\/)\S+$/.test(e.NOTIFICATION_WEBPUSH_SUBJECT ?? ""))
    problems.push("NOTIFICATION_WEBPUSH_SUBJECT must be a mailto: or https: URL");
  return problems.length > 0 ? problems : undefined;
};

/** The service account file, read and parsed; undefined when unset. Throws naming what is wrong with it. */
export function readServiceAccount(path: string | undefined): ServiceAccount | undefined {
  if (!path) return undefined;
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch {
    throw new Error(`NOTIFICATION_FCM_SERVICE_ACCOUNT_FILE=${path} cannot be read`);
  }
  try {
    return parseServiceAccount(text);
  } catch (error) {
    throw new Error(`NOTIFICATION_FCM_SERVICE_ACCOUNT_FILE=${path}: ${(error as Error).message}`);
  }
}

const serviceAccountReadable: Rule<PushEnv> = (e) => {
  try {
    readServiceAccount(e.NOTIFICATION_FCM_SERVICE_ACCOUNT_FILE);
    return undefined;
  } catch (error) {
    return (error as Error).message;
  }
};

export const pushRules: Rule<PushEnv>[] = [vapidComplete, serviceAccountReadable];

export function pushSettings(e: PushEnv) {
  const vapid = e.NOTIFICATION_WEBPUSH_VAPID_PUBLIC_KEY
    ? {
        publicKey: e.NOTIFICATION_WEBPUSH_VAPID_PUBLIC_KEY,
        privateKey: e.NOTIFICATION_WEBPUSH_VAPID_PRIVATE_KEY as string,
        subject: e.NOTIFICATION_WEBPUSH_SUBJECT as string,
      }
    : undefined;
  return {
    /** Undefined: Web Push is off. */
    vapid,
    /** The service account file's path; undefined: FCM is off. */
    fcmServiceAccountFile: e.NOTIFICATION_FCM_SERVICE_ACCOUNT_FILE,
    fcmBaseUrl: e.NOTIFICATION_FCM_BASE_URL,
    defaultTtlSeconds: Math.floor(e.NOTIFICATION_PUSH_TTL / 1000),
    timeoutMs: e.NOTIFICATION_PUSH_TIMEOUT,
    maxAttempts: e.NOTIFICATION_PUSH_MAX_ATTEMPTS,
    backoff: backoffPolicy(BACKOFF, e),
    perService: e.NOTIFICATION_PUSH_CONCURRENCY,
    maxInFlight: e.NOTIFICATION_PUSH_MAX_IN_FLIGHT,
  };
}
