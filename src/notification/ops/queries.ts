// SQL of the notification operator subcommands (docs/operations.md): each statement touches only the rows it names.
import type { Db, Sql } from "../../shared/db.ts";
import { DELIVERY_CHANNEL } from "../work/delivery/queries.ts";

export type DlqEntry = {
  notification_id: string;
  event_id: string;
  error_message: string;
  created_at: Date;
  user_id: string | null;
  status: string | null;
  attempt_count: number | null;
};

export async function listNotificationDlq(db: Db, options: { limit: number }): Promise<DlqEntry[]> {
  return db<DlqEntry[]>`
    select d.notification_id, d.event_id, d.error_message, d.created_at, n.user_id, n.status, n.attempt_count
    from notification_dlq d
    left join notifications n on n.notification_id = d.notification_id
    order by d.created_at, d.notification_id
    limit ${options.limit}`;
}

export type DlqRequeue =
  | { kind: "requeued"; previousAttempts: number; dlqRowsDeleted: number }
  | { kind: "not-failed"; status: string }
  | { kind: "not-found" };

/**
 * A FAILED notification back to PENDING with a fresh attempt budget, and its notification_dlq row deleted, in one
 * transaction: either both happen or neither (a FAILED notification always has its DLQ row).
 */
export async function requeueDlqNotification(db: Sql, notificationId: string): Promise<DlqRequeue> {
  const result = await moveBackToPending(db, notificationId);
  // Wakes the delivery workers at once (they LISTEN on this channel) instead of at their idle poll; after the commit.
  if (result.kind === "requeued") await db`select pg_notify(${DELIVERY_CHANNEL}, '')`;
  return result;
}

function moveBackToPending(db: Sql, notificationId: string): Promise<DlqRequeue> {
  return db.begin(async (tx) => {
    const [row] = await tx<{ status: string; attempt_count: number }[]>`
      select status, attempt_count from notifications where notification_id = ${notificationId}::uuid for update`;
    if (!row) return { kind: "not-found" };
    if (row.status !== "FAILED") return { kind: "not-failed", status: row.status };
    await tx`
      update notifications
      set status = 'PENDING', attempt_count = 0, next_retry_at = now(), locked_by = null, locked_at = null,
          lease_until = null
      where notification_id = ${notificationId}::uuid and status = 'FAILED'`;
    const deleted = await tx`delete from notification_dlq where notification_id = ${notificationId}::uuid`;
    return { kind: "requeued", previousAttempts: row.attempt_count, dlqRowsDeleted: deleted.count };
  }) as Promise<DlqRequeue>;
}

export type NatsDlqEntry = {
  stream_seq: number;
  stream: string;
  consumer: string | null;
  kind: string | null;
  deliveries: number | null;
  created_at: Date;
  replayed_at: Date | null;
};

export async function listNatsDlq(db: Db, options: { limit: number }): Promise<NatsDlqEntry[]> {
  const rows = await db<NatsDlqEntry[]>`
    select stream_seq, stream, consumer, kind, deliveries, created_at, replayed_at
    from notification_nats_dlq
    order by created_at, stream_seq
    limit ${options.limit}`;
  return rows.map((r) => ({
    ...r,
    stream_seq: Number(r.stream_seq),
    deliveries: r.deliveries && Number(r.deliveries),
  }));
}

export async function findNatsDlqEntry(
  db: Db,
  key: { stream: string; streamSeq: number },
): Promise<NatsDlqEntry | undefined> {
  const [row] = await db<NatsDlqEntry[]>`
    select stream_seq, stream, consumer, kind, deliveries, created_at, replayed_at
    from notification_nats_dlq
    where stream = ${key.stream} and stream_seq = ${key.streamSeq}`;
  return row && { ...row, stream_seq: Number(row.stream_seq), deliveries: row.deliveries && Number(row.deliveries) };
}

export async function markNatsDlqReplayed(db: Db, key: { stream: string; streamSeq: number }): Promise<Date> {
  const [row] = await db<{ replayed_at: Date }[]>`
    update notification_nats_dlq set replayed_at = now()
    where stream = ${key.stream} and stream_seq = ${key.streamSeq}
    returning replayed_at`;
  if (!row) throw new Error(`notification_nats_dlq row ${key.stream}/${key.streamSeq} disappeared during the replay`);
  return row.replayed_at;
}
