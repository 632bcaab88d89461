// What a push carries, shared by Web Push and FCM: the notification's id, seq and type, and what a device shows (the
// title and body a sender gave, the data). A notification from the send API keeps title, body, data, collapse_key and
// expires_at in its payload; one made from an event has none of them, and its whole payload is the data.
import { createHash } from "node:crypto";

export type PushNotification = {
  notificationId: string;
  seq: number;
  type: string;
  payload: Record<string, unknown>;
};

export type PushContent = {
  notification_id: string;
  seq: number;
  type: string;
  title: string | null;
  body: string | null;
  data: unknown;
};

/**
 * Bytes of a Web Push message at most once encrypted (RFC 8030 section 7.2: push services must accept 4,096). The
 * aes128gcm record adds 86 bytes of header (salt 16, record size 4, key id length 1, the sender's key 65), a padding
 * delimiter and a 16-byte tag: 103 bytes, which leaves 3,993 for the JSON.
 */
export const MAX_ENCRYPTED_BYTES = 4096;
export const MAX_PLAINTEXT_BYTES = MAX_ENCRYPTED_BYTES - 103;

const text = (value: unknown) => (typeof value === "string" ? value : null);

/** True for a payload made by the send API, whose fields are the sender's (its data is the sender's data). */
const isSent = (payload: Record<string, unknown>) => "request_id" in payload && "data" in payload;

export function pushContent(n: PushNotification): PushContent {
  const p = n.payload;
  return {
    notification_id: n.notificationId,
    seq: n.seq,
    type: n.type,
    title: text(p.title),
    body: text(p.body),
    data: isSent(p) ? (p.data ?? null) : p,
  };
}

/** The JSON a Web Push carries: the whole content when it fits MAX_PLAINTEXT_BYTES, else without its data. */
export function webPushPlaintext(content: PushContent): string {
  const whole = JSON.stringify(content);
  if (Buffer.byteLength(whole) <= MAX_PLAINTEXT_BYTES) return whole;
  const withoutData = JSON.stringify({ ...content, data: null });
  if (Buffer.byteLength(withoutData) <= MAX_PLAINTEXT_BYTES) return withoutData;
  // Title (200) and body (2,000 characters) fit unless they are made of long multi-byte characters: cut the body.
  return JSON.stringify({ ...content, data: null, body: (content.body ?? "").slice(0, 500) });
}

export const collapseKeyOf = (n: PushNotification) => text(n.payload.collapse_key);

/**
 * The Web Push `Topic` for a collapse key: at most 32 characters of the URL-safe base64 alphabet (RFC 8030 section
 * 5.4), so a hash of the key rather than the key itself (which may hold any character and is the sender's text).
 */
export const topicOf = (collapseKey: string) =>
  createHash("sha256").update(collapseKey).digest("base64url").slice(0, 32);

/** Seconds a push service keeps an undelivered push: until `expires_at`, else the default; 0 once it has passed. */
export function ttlSeconds(n: PushNotification, now: Date, defaultSeconds: number): number {
  const expiresAt = text(n.payload.expires_at);
  if (expiresAt === null) return defaultSeconds;
  const at = Date.parse(expiresAt);
  if (Number.isNaN(at)) return defaultSeconds;
  return Math.max(0, Math.floor((at - now.getTime()) / 1000));
}

export function isExpired(n: PushNotification, now: Date): boolean {
  const expiresAt = text(n.payload.expires_at);
  return expiresAt !== null && Date.parse(expiresAt) <= now.getTime();
}
