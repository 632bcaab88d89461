// SQL of the advisory capture.
import type { Db } from "../../../shared/db.ts";
import type { NatsDlqEntry } from "./parse.ts";

/** Records one advisory; the same message twice (a redelivered advisory) is kept once. Returns rows added. */
export async function insertNatsDlqEntry(db: Db, entry: NatsDlqEntry, now: Date): Promise<number> {
  const result = await db`
    insert into notification_nats_dlq (stream_seq, created_at, stream, consumer, kind, deliveries)
    values (${entry.streamSeq}, ${now}, ${entry.stream ?? ""}, ${entry.consumer}, ${entry.kind}, ${entry.deliveries})
    on conflict (stream, stream_seq) do nothing`;
  return result.count;
}
