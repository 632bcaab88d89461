// `notification nats-dlq list|replay <stream_seq> [--stream NAME] [--force]`: messages JetStream gave up on
// (MAX_DELIVERIES / MSG_TERMINATED advisories), and their replay. A replay fetches the original message from its stream
// by sequence and republishes payload and headers to its subject under a new Nats-Msg-Id, so the stream's duplicate
// window does not swallow it; `processed_events` still deduplicates by event_id on the consuming side.
import { headers } from "@nats-io/transport-node";
import type { Subcommand } from "../../shared/cli.ts";
import { operation, positionals, quoted, splitFlags, UsageError, wholeNumber } from "../../shared/cli-args.ts";
import type { OpsDeps } from "../../shared/ops.ts";
import type { NotificationConfig } from "../config.ts";
import { type Jet, type OpsEnv, opsSubcommand, parseLimit, withJetStream } from "./context.ts";
import { findNatsDlqEntry, listNatsDlq, markNatsDlqReplayed } from "./queries.ts";

export const NATS_DLQ_USAGE =
  "usage: notification nats-dlq list [--limit N] | replay <stream_seq> [--stream NAME] [--force]";

export async function printNatsDlq({ sql, out }: OpsDeps, options: { limit: number }): Promise<number> {
  const rows = await listNatsDlq(sql, options);
  for (const r of rows) {
    out(
      `${r.created_at.toISOString()} stream_seq=${r.stream_seq} stream=${r.stream || "?"} consumer=${r.consumer ?? "?"} ` +
        `kind=${r.kind ?? "?"} deliveries=${r.deliveries ?? "?"} ` +
        `replayed=${r.replayed_at ? r.replayed_at.toISOString() : "no"}`,
    );
  }
  out(rows.length === 0 ? "NATS DLQ is empty" : `${rows.length} message(s) in the NATS DLQ`);
  return 0;
}

/** `stream`: the stream the message was given up in (by default the configured NOTIFICATION_NATS_STREAM). */
export type ReplayOptions = { streamSeq: number; force: boolean; stream: string };

/** Replays one recorded message with an open JetStream connection (`jet`); see the file comment. */
export async function replayNatsDlq({ sql, out }: OpsDeps, jet: Jet, options: ReplayOptions): Promise<number> {
  const key = { stream: options.stream, streamSeq: options.streamSeq };
  const entry = await findNatsDlqEntry(sql, key);
  if (!entry) {
    out(`no notification_nats_dlq row with stream_seq ${options.streamSeq} in stream ${options.stream}`);
    return 1;
  }
  if (entry.replayed_at && !options.force) {
    out(
      `stream_seq ${entry.stream_seq} was already replayed at ${entry.replayed_at.toISOString()}: nothing to do ` +
        "(pass --force to replay it again)",
    );
    return 0;
  }
  const stream = options.stream;
  const original = await jet.jsm.streams.getMessage(stream, { seq: entry.stream_seq }).catch((error: unknown) => {
    throw new Error(`cannot fetch message ${entry.stream_seq} from stream ${stream}`, { cause: error });
  });
  if (!original) {
    out(`message ${entry.stream_seq} is no longer in stream ${stream} (deleted or aged out): cannot replay`);
    return 1;
  }
  const copied = headers();
  for (const key of original.header?.keys() ?? []) {
    if (key.toLowerCase() === "nats-msg-id") continue;
    for (const value of original.header.values(key)) copied.append(key, value);
  }
  const originalId = original.header?.get("Nats-Msg-Id") || `${stream}-${entry.stream_seq}`;
  // A forced second replay needs an id of its own, or the duplicate window would drop it as the first replay's twin.
  const msgID = `${originalId}-replay-${entry.stream_seq}${entry.replayed_at ? `-${Date.now()}` : ""}`;
  const ack = await jet.js.publish(original.subject, original.data, {
    msgID,
    headers: copied,
    expect: { streamName: stream },
  });
  const replayedAt = await markNatsDlqReplayed(sql, key);
  out(
    `replayed stream_seq ${entry.stream_seq} of ${stream} to ${original.subject} as seq ${ack.seq} ` +
      `(Nats-Msg-Id ${msgID}${ack.duplicate ? ", JetStream reported a duplicate" : ""}); ` +
      `replayed_at=${replayedAt.toISOString()}`,
  );
  return 0;
}

type NatsDlqArgs =
  | { op: "list"; limit: number }
  | { op: "replay"; streamSeq: number; force: boolean; stream: string | undefined };

const STREAM_NAME = /^[A-Za-z0-9_-]{1,255}$/;

function parseNatsDlqArgs(args: string[]): NatsDlqArgs {
  const [first, ...rest] = args;
  const op = operation(first, ["list", "replay"] as const);
  if (op === "list") return { op, limit: parseLimit(rest) };
  const { positional, flags } = splitFlags(rest, { "--stream": "value", "--force": "switch" });
  const [seq] = positionals(positional, ["<stream_seq>"]) as [string];
  const stream = flags["--stream"];
  if (stream !== undefined && !STREAM_NAME.test(stream)) {
    throw new UsageError(`--stream ${quoted(stream)} is not a stream name (1 to 255 of A-Z, a-z, 0-9, _ and -)`);
  }
  const streamSeq = wholeNumber("<stream_seq>", seq, 1, Number.MAX_SAFE_INTEGER);
  return { op, streamSeq, force: flags["--force"] === true, stream };
}

function replayWith(deps: OpsDeps & { config: NotificationConfig }, args: ReplayOptions): Promise<number> {
  return withJetStream(deps.config, (jet) => replayNatsDlq(deps, jet, args));
}

export function natsDlqSubcommand(env: OpsEnv = process.env): Subcommand {
  return opsSubcommand(env, {
    name: "nats-dlq",
    summary:
      "nats-dlq list [--limit N] | replay <stream_seq> [--stream NAME] [--force]   (JetStream DLQ, see docs/operations.md)",
    usage: NATS_DLQ_USAGE,
    parse: parseNatsDlqArgs,
    run: (deps, parsed) =>
      parsed.op === "list"
        ? printNatsDlq(deps, { limit: parsed.limit })
        : replayWith(deps, {
            streamSeq: parsed.streamSeq,
            force: parsed.force,
            stream: parsed.stream ?? deps.config.nats.stream,
          }),
  });
}
