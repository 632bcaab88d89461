// Single-use tickets for a browser's EventSource, which cannot send an Authorization header: a player with a valid
// token asks for one and puts it in the stream's URL. Stored in the database (by digest), so a ticket issued by one
// replica opens a stream on any other; taking it deletes it.
import { createHash, randomBytes } from "node:crypto";
import type { Db } from "../../shared/db.ts";
import { ApiError } from "../../shared/http/errors.ts";
import type { Player } from "./player-auth.ts";
import { storeTicket, takeTicket } from "./ticket-queries.ts";

export const TICKET_SECONDS = 60;
const TICKET = /^[A-Za-z0-9_-]{43}$/;

const digestOf = (ticket: string) => createHash("sha256").update(ticket).digest();

export async function issueTicket(db: Db, player: Player, now: Date) {
  const ticket = randomBytes(32).toString("base64url");
  await storeTicket(db, {
    digest: digestOf(ticket),
    userId: player.userId,
    tokenExpiresAt: new Date(player.expiresAtMs),
    expiresAt: new Date(now.getTime() + TICKET_SECONDS * 1000),
    now,
  });
  return { ticket, expires_in: TICKET_SECONDS };
}

/** The player a ticket was issued to; 401 for a ticket unknown, used already or expired (all alike). */
export async function redeemTicket(db: Db, ticket: string, now: Date): Promise<Player> {
  const grant = TICKET.test(ticket) ? await takeTicket(db, digestOf(ticket)) : undefined;
  if (!grant || grant.expiresAt <= now || grant.tokenExpiresAt <= now) {
    throw new ApiError(401, "UNAUTHORIZED", "the stream ticket is unknown, used or expired", {
      "www-authenticate": 'Bearer error="invalid_token"',
    });
  }
  return { userId: grant.userId, expiresAtMs: grant.tokenExpiresAt.getTime() };
}
