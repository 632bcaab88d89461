// One grant/revoke request as the drill sends it and records it: what was asked, of which replica, when, how long it
// took, and the answer, or why there was none (a killed replica, a client-side timeout).
export type Action = "grants" | "revokes";
export type Body = {
  user_id: string;
  stock_keeping_unit: string;
  reason: string;
  purchase_id: string;
  /** Only in poison: a date that does not exist or that PostgreSQL cannot store. */
  expires_at?: string;
};

/** `retryAfterS`: the answer's Retry-After in whole seconds, when it carried one (a 429, a 503). */
export type Answer = { status: number; body: Record<string, unknown>; text: string; retryAfterS?: number };

/** Retry-After as whole seconds (the only form the services send); undefined when absent or not that form. */
export function retryAfterSeconds(header: string | null): number | undefined {
  return header !== null && /^\d{1,6}$/.test(header.trim()) ? Number(header.trim()) : undefined;
}

export type Sent = {
  /** poison: an id the API must refuse (a control character, an over-long id); never committed, never settled. */
  kind: "fresh" | "replay" | "reuse" | "poison";
  action: Action;
  key: string;
  body: Body;
  replica: string;
  startedAt: number;
  ms: number;
  /** Undefined: not answered (connection refused or reset, client-side timeout). */
  answer?: Answer;
  error?: string;
  /** For replay and reuse: the request whose key they use. */
  original?: Sent;
  /** For a fresh request that was not answered, or answered 5xx: the answer of its idempotent replay. */
  settled?: Answer;
};

/** Longer than the service's own request timeout (10s), so a hang shows as a latency above the drill's bound. */
export const CLIENT_TIMEOUT_MS = 15_000;

/** POSTs a JSON body under an Idempotency-Key; the answer, or why there was none, and the time it took. */
export async function postJson(
  url: string,
  token: string,
  key: string,
  body: unknown,
  timeoutMs = CLIENT_TIMEOUT_MS,
  session?: Bun.FetchSession,
): Promise<{ answer?: Answer; error?: string; ms: number }> {
  const started = performance.now();
  try {
    const response = await (session?.fetch ?? fetch)(url, {
      method: "POST",
      headers: { "content-type": "application/json", "idempotency-key": key, authorization: `Bearer ${token}` },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(timeoutMs),
    });
    const text = await response.text();
    let parsed: Record<string, unknown> = {};
    try {
      parsed = JSON.parse(text);
    } catch {}
    const retryAfterS = retryAfterSeconds(response.headers.get("retry-after"));
    const answer: Answer = {
      status: response.status,
      body: parsed,
      text,
      ...(retryAfterS === undefined ? {} : { retryAfterS }),
    };
    return { answer, ms: performance.now() - started };
  } catch (error) {
    const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    return { error: message, ms: performance.now() - started };
  }
}

export function send(
  baseUrl: string,
  token: string,
  request: { action: Action; key: string; body: Body },
  timeoutMs = CLIENT_TIMEOUT_MS,
  session?: Bun.FetchSession,
): Promise<{ answer?: Answer; error?: string; ms: number }> {
  const url = `${baseUrl}/v1/entitlements/${request.action}`;
  return postJson(url, token, request.key, request.body, timeoutMs, session);
}

/**
 * Whether an answer is definite: neither a 5xx nor a 429. A 429 is refused before the request is looked at, so it says
 * nothing of an earlier attempt under the same key that may have committed: the client retries it with the key, as a
 * 5xx or no answer, and only a definite answer tells it the outcome.
 */
export const definite = (answer: Answer | undefined): boolean =>
  answer !== undefined && answer.status < 500 && answer.status !== 429;

/** The answer that counts for a fresh request: its own when it was a definite one, else its replay's. */
export function finalAnswer(s: Sent): Answer | undefined {
  if (s.answer && definite(s.answer)) return s.answer;
  return s.settled;
}

export const needsSettling = (s: Sent) => s.kind === "fresh" && !definite(s.answer);
