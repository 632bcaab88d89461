// How a file's valid rows go to the command path: one command per row, except that a user's grants with the same
// reason and expiry go together as bundle grants of up to 100 items (one round trip instead of one per item). Each
// batch's idempotency key is derived from the file's content and its rows, so the same file applied again, after a
// crash too, replays what was done instead of doing it twice. The batches depend on the file alone (not on the
// entitlements' state), so every run of one file makes the same batches with the same keys.
import { MAX_BUNDLE_ITEMS } from "../bundles/model.ts";
import type { BulkChange } from "./rows.ts";

export type BulkBatch = { idempotencyKey: string; changes: BulkChange[] };

/**
 * The key space of every bulk file's keys: the file's, not the caller's, so the same file applied again from another
 * seat (another operator, the shell after the console) replays instead of undoing what was changed meanwhile (a
 * revoke of a row it granted). No caller has this name: token names have no colon, and the others' prefixes differ.
 */
export const BULK_KEY_SCOPE = "bulk:file";

function keyOf(fileHash: string, changes: BulkChange[]): string {
  const rows = changes.map((c) => [c.line, c.action, c.body.user_id, c.body.stock_keeping_unit]);
  const digest = new Bun.CryptoHasher("sha256").update(JSON.stringify([fileHash, rows])).digest("hex");
  return `bulk-${digest}`;
}

export function batchChanges(fileHash: string, changes: readonly BulkChange[]): BulkBatch[] {
  const groups = new Map<string, BulkChange[]>();
  const batches: BulkChange[][] = [];
  for (const change of changes) {
    if (change.action !== "GRANT") {
      batches.push([change]);
      continue;
    }
    const { user_id, reason, expires_at } = change.body;
    const group = JSON.stringify([user_id, reason, expires_at ?? null]);
    let open = groups.get(group);
    if (!open || open.length === MAX_BUNDLE_ITEMS) {
      open = [];
      groups.set(group, open);
      batches.push(open);
    }
    open.push(change);
  }
  return batches.map((batch) => ({ idempotencyKey: keyOf(fileHash, batch), changes: batch }));
}
