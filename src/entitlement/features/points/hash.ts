// The request hash of a points command: SHA-256 (hex) of its fields in a fixed order. The same key with the same
// request replays the stored reply; with another request it is a 409, the same replay rules as grants.
// execute_at is hashed as the client sent it, so a retry of "as soon as possible" still matches.

export type PointsRequest =
  | { action: "RESERVE"; user_id: string; point_amount: number; execute_at: string; reason: string | null }
  | { action: "CANCEL"; reservation_id: string };

export function pointsRequestHash(request: PointsRequest): string {
  const fields =
    request.action === "RESERVE"
      ? [request.action, request.user_id, request.point_amount, request.execute_at, request.reason]
      : [request.action, request.reservation_id];
  return new Bun.CryptoHasher("sha256").update(JSON.stringify(fields)).digest("hex");
}
