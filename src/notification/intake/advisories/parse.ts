// JetStream MAX_DELIVERIES / MSG_TERMINATED advisory JSON → the notification_nats_dlq row.
export type AdvisoryKind = "MAX_DELIVERIES" | "MSG_TERMINATED";

export type NatsDlqEntry = {
  streamSeq: number;
  stream: string | null;
  consumer: string | null;
  kind: AdvisoryKind;
  deliveries: number | null;
};

export type ParsedAdvisory = { ok: true; entry: NatsDlqEntry } | { ok: false; reason: string };

const text = (v: unknown) => (typeof v === "string" && v.length > 0 ? v : null);
const count = (v: unknown) => (typeof v === "number" && Number.isSafeInteger(v) && v >= 0 ? v : null);

/** Only a JSON number that is a positive integer counts as a stream sequence; `"42"` does not. */
export function parseAdvisory(data: Uint8Array, kind: AdvisoryKind): ParsedAdvisory {
  let body: unknown;
  try {
    body = JSON.parse(new TextDecoder().decode(data));
  } catch {
    return { ok: false, reason: "advisory is not JSON" };
  }
  if (typeof body !== "object" || body === null) return { ok: false, reason: "advisory is not a JSON object" };
  const fields = body as Record<string, unknown>;
  const streamSeq = fields.stream_seq;
  if (typeof streamSeq !== "number" || !Number.isSafeInteger(streamSeq) || streamSeq <= 0) {
    return { ok: false, reason: "advisory has no positive integer stream_seq" };
  }
  return {
    ok: true,
    entry: {
      streamSeq,
      stream: text(fields.stream),
      consumer: text(fields.consumer),
      kind,
      deliveries: count(fields.deliveries),
    },
  };
}
