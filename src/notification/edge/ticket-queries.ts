// SQL of the stream tickets: stored by digest, taken (deleted) once.
import type { Db } from "../../shared/db.ts";

export type TicketGrant = { userId: string; tokenExpiresAt: Date; expiresAt: Date };

/** Stores a ticket, and deletes those that expired unused (there are few: a ticket lives a minute). */
export async function storeTicket(db: Db, input: TicketGrant & { digest: Buffer; now: Date }): Promise<void> {
  await db`delete from player_stream_tickets where expires_at < ${input.now}`;
  await db`
    insert into player_stream_tickets (ticket_digest, user_id, token_expires_at, expires_at)
    values (${input.digest}, ${input.userId}, ${input.tokenExpiresAt}, ${input.expiresAt})`;
}

/** Takes a ticket: it is deleted whatever its age, so it can be used once; undefined when there was none. */
export async function takeTicket(db: Db, digest: Buffer): Promise<TicketGrant | undefined> {
  const [row] = await db<{ user_id: string; token_expires_at: Date; expires_at: Date }[]>`
    delete from player_stream_tickets where ticket_digest = ${digest}
    returning user_id, token_expires_at, expires_at`;
  return row && { userId: row.user_id, tokenExpiresAt: row.token_expires_at, expiresAt: row.expires_at };
}
