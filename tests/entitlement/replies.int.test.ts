// The entitlement commands' replies, byte for byte, as a client reads them: each first answer and its replay (asked
// later, so a reply made from the replay's own clock would differ) of a grant, a revoke, an extension and a bundle,
// and of every refusal they remember.
import { expect, setDefaultTimeout, test } from "bun:test";
import { type Body, type CommandPath, commandRequest, send, useApi } from "./api.helpers.ts";

setDefaultTimeout(60_000);

const f = useApi("entreplies", { resetEach: true });

const T = new Date("2031-03-04T05:06:07.089Z");
const at = (minutes: number) => new Date(T.getTime() + minutes * 60_000);
const iso = (minutes: number) => at(minutes).toISOString();

const post = (path: CommandPath, key: string, body: Body) => commandRequest(path, body, { "idempotency-key": key });

/** The answer at `minute`, then the same request again an hour later: both must be `expected`, status and bytes. */
async function answeredTwice(
  minute: number,
  path: CommandPath,
  key: string,
  body: Body,
  status: number,
  expected: string,
) {
  f.clock.at = at(minute);
  const first = await send(f.app, post(path, key, body));
  expect(first.status, first.text).toBe(status);
  expect(first.text, `${key}: the first answer`).toBe(expected);
  f.clock.at = at(minute + 60);
  const again = await send(f.app, post(path, key, body));
  expect(again.status, again.text).toBe(status);
  expect(again.text, `${key}: the replay`).toBe(expected);
}

const item = (sku: string, more: Record<string, unknown> = {}) => ({
  user_id: "u1",
  stock_keeping_unit: sku,
  reason: "purchase",
  purchase_id: `p-${sku}`,
  ...more,
});
/** The reply of a command that changed `sku`, at `minute`, byte for byte. */
const changed = (sku: string, status: string, version: number, minute: number, expiresAt?: string) =>
  `{"user_id":"u1","stock_keeping_unit":"${sku}","status":"${status}","version":${version},"updated_at":"${iso(minute)}"` +
  (expiresAt === undefined ? "}" : `,"expires_at":"${expiresAt}"}`);
const conflict = (message: string) => `{"code":"ENTITLEMENT_STATE_CONFLICT","message":"${message}"}`;

test("grant, grant again, revoke, revoke again, revoke of an item never granted", async () => {
  await answeredTwice(1, "grants", "g1", item("sword"), 200, changed("sword", "ACTIVE", 0, 1));
  await answeredTwice(2, "grants", "g2", item("sword"), 409, conflict("already ACTIVE"));
  await answeredTwice(3, "revokes", "r1", item("sword"), 200, changed("sword", "REVOKED", 1, 3));
  await answeredTwice(4, "revokes", "r2", item("sword"), 409, conflict("already REVOKED"));
  const april = item("sword", { expires_at: "2031-04-01T09:00:00+09:00" });
  await answeredTwice(5, "grants", "g3", april, 200, changed("sword", "ACTIVE", 2, 5, "2031-04-01T00:00:00.000Z"));
  await answeredTwice(6, "revokes", "r3", item("never"), 200, changed("never", "REVOKED", 0, 6));
});

test("an extension, and each of its refusals", async () => {
  f.clock.at = at(0);
  await send(f.app, post("grants", "g1", item("shield", { expires_at: "2031-04-01T00:00:00Z" })));
  await send(f.app, post("grants", "g2", item("sword")));
  // Each extension of the shield, at the minute of its key: to a later date, then to an earlier one; then the sword,
  // which has no expiry, and the bow, never granted.
  const extensions: [string, string, number, string][] = [
    ["shield", "2031-05-01T00:00:00Z", 200, changed("shield", "ACTIVE", 1, 1, "2031-05-01T00:00:00.000Z")],
    [
      "shield",
      "2031-04-15T00:00:00Z",
      409,
      conflict("expires_at must be later than the current one (2031-05-01T00:00:00.000Z)"),
    ],
    ["sword", "2031-05-01T00:00:00Z", 409, conflict("the entitlement has no expiry to extend")],
    ["bow", "2031-05-01T00:00:00Z", 409, conflict("not ACTIVE")],
  ];
  for (const [i, [sku, expiresAt, status, expected]] of extensions.entries()) {
    await answeredTwice(i + 1, "extensions", `x${i + 1}`, item(sku, { expires_at: expiresAt }), status, expected);
  }
});

test("a bundle lists every item in the request's order, each with its version, updated_at and changed", async () => {
  f.clock.at = at(0);
  await send(f.app, post("grants", "g1", item("shield")));
  const bundle = { user_id: "u1", stock_keeping_units: ["sword", "shield", "arrow"], reason: "r", purchase_id: "b" };
  const items = [
    `{"stock_keeping_unit":"sword","status":"ACTIVE","version":0,"updated_at":"${iso(1)}","changed":true}`,
    `{"stock_keeping_unit":"shield","status":"ACTIVE","version":0,"updated_at":"${iso(0)}","changed":false}`,
    `{"stock_keeping_unit":"arrow","status":"ACTIVE","version":0,"updated_at":"${iso(1)}","changed":true}`,
  ];
  await answeredTwice(1, "bundle-grants", "b1", bundle, 200, `{"user_id":"u1","items":[${items.join(",")}]}`);
});
