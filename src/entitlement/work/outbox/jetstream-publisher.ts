// The relay's JetStream publish: each event is one HPUB whose reply subject is a token under one inbox this publisher
// subscribes to once, and the PubAck that comes back there settles that event's promise. The client's own `publish`
// makes a request per message (a request object, its own timer, the mux's bookkeeping); here a message costs a map
// entry, and one sweep a second times out every ack that did not come. What comes back is read as the client reads
// it: a PubAck (with `duplicate` when the stream already held the Nats-Msg-Id), an API error, or 503 no responders
// (no stream holds the subject).
import type { JetStreamPublishOptions, PubAck } from "@nats-io/jetstream";
import {
  createInbox,
  errors,
  type Msg,
  type MsgHdrs,
  MsgHdrsImpl,
  type NatsConnection,
  type Payload,
  type Subscription,
} from "@nats-io/transport-node";
import type { Publisher } from "./publisher.ts";

type Pending = { resolve: (ack: PubAck) => void; reject: (error: unknown) => void; deadline: number };

const SWEEP_MS = 250;

export type JetStreamPublisher = Publisher & {
  /** Acks still awaited. */
  pending(): number;
  /** Unsubscribes; acks still awaited fail. */
  close(): void;
};

/** Reads what came back to a reply subject: the PubAck, or the error it stands for. */
export function readPubAck(msg: Pick<Msg, "data" | "headers" | "json">): PubAck | Error {
  const status = msg.headers?.code ?? 0;
  if (status === 503) return new Error("no responders: no stream holds the subject (503)");
  if (status >= 300) return new Error(`JetStream answered ${msg.headers?.status}`);
  let answer: { stream?: string; seq?: number; duplicate?: boolean; error?: { code?: number; description?: string } };
  try {
    answer = msg.json();
  } catch {
    return new Error("JetStream's answer is not JSON");
  }
  if (answer.error)
    return new Error(`JetStream refused the message: ${answer.error.description} (${answer.error.code})`);
  if (!answer.stream) return new Error("invalid ack response");
  return { stream: answer.stream, seq: answer.seq ?? 0, duplicate: answer.duplicate === true, domain: "" } as PubAck;
}

/**
 * The connection's own inbox prefix (NATS_INBOX_PREFIX), under which alone a least-privilege user may subscribe; the
 * client's `_INBOX` when it has none.
 */
const inboxPrefixOf = (nc: NatsConnection) => (nc as { options?: { inboxPrefix?: string } }).options?.inboxPrefix;

export function createJetStreamPublisher(nc: NatsConnection, options: { timeoutMs: number }): JetStreamPublisher {
  const prefix = createInbox(inboxPrefixOf(nc));
  const waiting = new Map<string, Pending>();
  let next = 0;
  const settle = (token: string, outcome: PubAck | Error) => {
    const entry = waiting.get(token);
    if (!entry) return;
    waiting.delete(token);
    if (outcome instanceof Error) entry.reject(outcome);
    else entry.resolve(outcome);
  };
  const subscription: Subscription = nc.subscribe(`${prefix}.*`, {
    callback: (error, msg) => {
      if (error) return;
      settle(msg.subject.slice(prefix.length + 1), readPubAck(msg));
    },
  });
  const sweep = setInterval(() => {
    const now = performance.now();
    for (const [token, entry] of waiting) if (entry.deadline <= now) settle(token, new errors.TimeoutError());
  }, SWEEP_MS);
  sweep.unref?.();

  const publish = (subject: string, data?: Payload, opts?: Partial<JetStreamPublishOptions>): Promise<PubAck> => {
    const token = (next++).toString(36);
    let headers = opts?.headers as MsgHdrs | undefined;
    if (opts?.msgID && !headers) headers = MsgHdrsImpl.fromRecord({ "Nats-Msg-Id": [opts.msgID] });
    else if (opts?.msgID && headers && !headers.has("Nats-Msg-Id")) headers.set("Nats-Msg-Id", opts.msgID);
    return new Promise<PubAck>((resolve, reject) => {
      waiting.set(token, { resolve, reject, deadline: performance.now() + (opts?.timeout ?? options.timeoutMs) });
      try {
        nc.publish(subject, data, { reply: `${prefix}.${token}`, headers });
      } catch (error) {
        waiting.delete(token);
        reject(error);
      }
    });
  };
  return {
    publish: publish as Publisher["publish"],
    pending: () => waiting.size,
    close: () => {
      clearInterval(sweep);
      subscription.unsubscribe();
      for (const token of [...waiting.keys()]) settle(token, new Error("the publisher was closed"));
    },
  };
}
