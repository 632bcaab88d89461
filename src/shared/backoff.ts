// Retry delay shared by the outbox relay and the delivery worker:
//   exp = base * exponentBase^(attempt-1); capped = min(exp, max); jitter in [jitterMin, jitterMax);
//   delay = max(min, ceil(capped * jitter)), in milliseconds.
export type BackoffPolicy = {
  baseMs: number;
  maxMs: number;
  minMs: number;
  exponentBase: number;
  jitterMin: number;
  jitterMax: number;
};

/** `attempt` is 1-based (the attempt that just failed). `random` returns a value in [0, 1). */
export function backoffMs(policy: BackoffPolicy, attempt: number, random: () => number = Math.random): number {
  const exp = policy.baseMs * policy.exponentBase ** Math.max(0, attempt - 1);
  const capped = Math.min(exp, policy.maxMs);
  const jitter = policy.jitterMin + random() * (policy.jitterMax - policy.jitterMin);
  return Math.max(policy.minMs, Math.ceil(capped * jitter));
}

/** Error text for storage: the message (or "unknown error"), cut to `maxLength` characters. */
export function errorText(error: unknown, maxLength: number): string {
  const message = error instanceof Error ? error.message : typeof error === "string" ? error : "";
  return (message || "unknown error").slice(0, maxLength);
}
