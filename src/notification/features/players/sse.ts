// The text of a Server-Sent Events stream (the HTML standard's `text/event-stream`): one frame per notification,
// `event: reset` when what was asked for is gone, and comments that keep proxies from closing a quiet connection.
import { badRequest } from "../../../shared/http/errors.ts";
import { MAX_SEQ, type PlayerNotification } from "./model.ts";

const encoder = new TextEncoder();

/** Sent first: how long a browser's EventSource waits before it reconnects, and a comment that opens the body. */
export const OPENING = encoder.encode("retry: 2000\n: stream open\n\n");
export const KEEP_ALIVE = encoder.encode(": keep-alive\n\n");

export function notificationFrame(item: PlayerNotification): Uint8Array {
  return encoder.encode(`id: ${item.seq}\nevent: notification\ndata: ${JSON.stringify(item)}\n\n`);
}

/**
 * Retention deleted notifications the client asked for (or the seq it named was never given): it should reload the
 * inbox. `last_seq` is the player's latest seq; the stream goes on with what is still stored after the client's seq.
 */
export function resetFrame(lastSeq: string): Uint8Array {
  return encoder.encode(`event: reset\ndata: ${JSON.stringify({ last_seq: Number(lastSeq) })}\n\n`);
}

/** Why the server ends a stream the client should not simply reconnect: `stream_limit`, the player opened too many. */
export function closedFrame(reason: "stream_limit"): Uint8Array {
  return encoder.encode(`event: closed\ndata: {"reason": ${JSON.stringify(reason)}}\n\n`);
}

const SEQ = /^(0|[1-9]\d{0,15})$/;

/**
 * The seq to resume after: the Last-Event-ID header, else the `last_event_id` parameter; undefined when neither. A
 * seq is at most MAX_SEQ, the largest a client was ever sent.
 */
export function resumePoint(header: string | null, query: string | undefined): string | undefined {
  const given = header ?? query;
  if (given === undefined || given === "") return undefined;
  const seq = given.trim();
  if (!SEQ.test(seq) || Number(seq) > MAX_SEQ) {
    throw badRequest(
      `${header === null ? "last_event_id" : "Last-Event-ID"} must be a seq: an integer from 0 to ${MAX_SEQ}`,
    );
  }
  return seq;
}
