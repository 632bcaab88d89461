// One push through FCM HTTP v1 (messages:send) to a registration token: what a device shows (notification), what the
// app reads (data, strings only), and how Android and APNs collapse and expire it. The base URL is the operator's
// (NOTIFICATION_FCM_BASE_URL, an emulator in tests), not player input, so it is not put through the endpoint guard.
import type { AccessTokens } from "./fcm-auth.ts";
import { collapseKeyOf, type PushNotification, pushContent, topicOf, ttlSeconds } from "./payload.ts";
import { type PushResult, resultOfStatus, unanswered } from "./result.ts";

export type FcmDeps = {
  projectId: string;
  baseUrl: string;
  tokens: AccessTokens;
  now: () => Date;
  defaultTtlSeconds: number;
  timeoutMs: number;
};

/** FCM refuses a message whose data is over 4,096 bytes; the payload string is left out (null) beyond this. */
const MAX_DATA_PAYLOAD_BYTES = 3_500;
/** APNs refuses an apns-collapse-id over 64 bytes: a longer collapse key is sent as its hash. */
const MAX_APNS_COLLAPSE_ID_BYTES = 64;

export function fcmMessage(deps: Pick<FcmDeps, "now" | "defaultTtlSeconds">, token: string, n: PushNotification) {
  const content = pushContent(n);
  const payload = JSON.stringify(content.data);
  const collapseKey = collapseKeyOf(n);
  const ttl = ttlSeconds(n, deps.now(), deps.defaultTtlSeconds);
  const collapseId =
    collapseKey === null
      ? undefined
      : Buffer.byteLength(collapseKey) <= MAX_APNS_COLLAPSE_ID_BYTES
        ? collapseKey
        : topicOf(collapseKey);
  const apnsHeaders: Record<string, string> = {
    "apns-expiration": String(Math.floor(deps.now().getTime() / 1000) + ttl),
    ...(collapseId === undefined ? {} : { "apns-collapse-id": collapseId }),
  };
  return {
    message: {
      token,
      ...(content.title !== null || content.body !== null
        ? { notification: { title: content.title ?? "", body: content.body ?? "" } }
        : {}),
      data: {
        notification_id: content.notification_id,
        seq: String(content.seq),
        type: content.type,
        payload: Buffer.byteLength(payload) <= MAX_DATA_PAYLOAD_BYTES ? payload : "null",
      },
      android: { ttl: `${ttl}s`, ...(collapseKey === null ? {} : { collapse_key: collapseKey }) },
      apns: { headers: apnsHeaders },
    },
  };
}

type FcmErrorBody = { error?: { status?: string; details?: { errorCode?: string }[] } };

/** FCM's error code for a refused message: details[].errorCode (UNREGISTERED, QUOTA_EXCEEDED, …), else its status. */
function fcmErrorCode(text: string): string | undefined {
  try {
    const body = JSON.parse(text) as FcmErrorBody;
    return body.error?.details?.find((d) => typeof d.errorCode === "string")?.errorCode ?? body.error?.status;
  } catch {
    return undefined;
  }
}

function resultOfAnswer(answer: Response, text: string, now: Date): PushResult {
  const code = fcmErrorCode(text);
  const error = `FCM answered ${answer.status}${code ? ` ${code}` : ""}`;
  if (code === "UNREGISTERED") return { outcome: "gone", statusCode: answer.status, error };
  // A refused access token is this service's fault, not the device's: fetched again, the push is retried.
  if (answer.status === 401) return { outcome: "retry", statusCode: 401, error, retryAfterMs: null };
  // A 404 without FCM's error body is not FCM speaking of the token (a wrong NOTIFICATION_FCM_BASE_URL, a proxy):
  // deleting the device on it would delete every device the misconfiguration is tried with.
  if (answer.status === 404 && code === undefined) return { outcome: "failed", statusCode: 404, error };
  return resultOfStatus(answer.status, error, answer.headers.get("retry-after"), now);
}

export function createFcmSender(deps: FcmDeps) {
  const url = `${deps.baseUrl.replace(/\/+$/, "")}/v1/projects/${encodeURIComponent(deps.projectId)}/messages:send`;
  return async (token: string, n: PushNotification): Promise<PushResult> => {
    let accessToken: string;
    try {
      accessToken = await deps.tokens.get();
    } catch (error) {
      return unanswered(`no FCM access token: ${error instanceof Error ? error.message : String(error)}`);
    }
    try {
      const answer = await fetch(url, {
        method: "POST",
        headers: { authorization: `Bearer ${accessToken}`, "content-type": "application/json" },
        body: JSON.stringify(fcmMessage(deps, token, n)),
        redirect: "manual",
        signal: AbortSignal.timeout(deps.timeoutMs),
      });
      const text = await answer.text().catch(() => "");
      if (answer.status === 401) deps.tokens.forget(accessToken);
      return resultOfAnswer(answer, text, deps.now());
    } catch (error) {
      return unanswered(error instanceof Error ? error.message : String(error));
    }
  };
}
