// The points commands' replies, byte for byte, as a client reads them: the first answer and its replay (asked later,
// so a reply made from the replay's own clock would differ) of a reservation, a cancel, and the two refusals.
import { expect, setDefaultTimeout, test } from "bun:test";
import { send, useApi } from "../entitlement/api.helpers.ts";

setDefaultTimeout(60_000);

const f = useApi("ptsreplies", { resetEach: true });

const T = new Date("2031-03-04T05:06:07.089Z");
const later = (minutes: number) => new Date(T.getTime() + minutes * 60_000);

function post(path: string, key: string, body?: unknown) {
  return new Request(`http://localhost${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", "idempotency-key": key },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

/** The answer at T, then the same request again ten minutes later: both must be `expected`, status and bytes. */
async function answeredTwice(
  path: string,
  key: string,
  body: unknown,
  status: number,
  expected: (id: string) => string,
) {
  f.clock.at = T;
  const first = await send(f.app, post(path, key, body));
  const id = String(first.json.reservation_id ?? "");
  expect(first.status, first.text).toBe(status);
  expect(first.text, "the first answer").toBe(expected(id));
  f.clock.at = later(10);
  const again = await send(f.app, post(path, key, body));
  expect(again.status).toBe(status);
  expect(again.text, "the replay").toBe(expected(id));
  return id;
}

const reserveBody = { user_id: "u1", point_amount: 100, execute_at: "2031-03-05T00:00:00.000Z", reason: "gift" };
const reservation = (id: string, status: string, at: string, reason = '"gift"') =>
  `{"reservation_id":"${id}","user_id":"u1","point_amount":100,"execute_at":"2031-03-05T00:00:00.000Z",` +
  `"reason":${reason},"status":"${status}","created_at":"2031-03-04T05:06:07.089Z","updated_at":"${at}"}`;

test("a reservation: 201 with the row as inserted, reason or none", async () => {
  await answeredTwice("/v1/points/reservations", "r1", reserveBody, 201, (id) =>
    reservation(id, "PENDING", "2031-03-04T05:06:07.089Z"),
  );
  const { reason: _, ...noReason } = reserveBody;
  await answeredTwice("/v1/points/reservations", "r2", noReason, 201, (id) =>
    reservation(id, "PENDING", "2031-03-04T05:06:07.089Z", "null"),
  );
});

test("a reservation past the balance cap: 409 naming the balance digit for digit", async () => {
  await f.sql`insert into point_balances (user_id, balance, updated_at) values ('u1', 9007199254740990, now())`;
  const message = "the balance may not exceed 9007199254740991 points; it is 9007199254740990";
  await answeredTwice(
    "/v1/points/reservations",
    "r3",
    reserveBody,
    409,
    () => `{"code":"POINTS_BALANCE_LIMIT","message":"${message}"}`,
  );
});

test("a cancel: 200 with the cancelled row; a cancel of a cancelled or DONE one: 409 naming its status", async () => {
  f.clock.at = T;
  const id = String((await send(f.app, post("/v1/points/reservations", "r4", reserveBody))).json.reservation_id);
  f.clock.at = later(1);
  const path = `/v1/points/reservations/${id}/cancel`;
  const cancelled = await send(f.app, post(path, "c1"));
  expect(cancelled.text).toBe(
    reservation(id, "CANCELLED", "2031-03-04T05:06:07.089Z").replace(
      /"updated_at":"[^"]*"/,
      '"updated_at":"2031-03-04T05:07:07.089Z"',
    ),
  );
  f.clock.at = later(10);
  expect((await send(f.app, post(path, "c1"))).text, "the replay").toBe(cancelled.text);
  const conflict = (status: string) => () =>
    `{"code":"RESERVATION_STATE_CONFLICT","message":"reservation is ${status}; only a PENDING reservation can be cancelled"}`;
  await answeredTwice(path, "c2", undefined, 409, conflict("CANCELLED"));
  f.clock.at = T;
  const done = String((await send(f.app, post("/v1/points/reservations", "r5", reserveBody))).json.reservation_id);
  await f.sql`update point_reservations set status = 'DONE', executed_at = now(), transaction_id = gen_random_uuid()
              where reservation_id = ${done}`;
  await answeredTwice(`/v1/points/reservations/${done}/cancel`, "c3", undefined, 409, conflict("DONE"));
});

test("a key a grant stored its facts under, sent with a reservation: 409 key conflict, not a reply of those facts", async () => {
  f.clock.at = T;
  const grant = new Request("http://localhost/v1/entitlements/grants", {
    method: "POST",
    headers: { "content-type": "application/json", "idempotency-key": "shared" },
    body: JSON.stringify({ user_id: "u1", stock_keeping_unit: "sword", reason: "purchase", purchase_id: "p1" }),
  });
  expect((await send(f.app, grant)).status).toBe(200);
  const reserved = await send(f.app, post("/v1/points/reservations", "shared", reserveBody));
  expect(reserved.status, reserved.text).toBe(409);
  expect(reserved.text).toBe('{"code":"IDEMPOTENCY_KEY_CONFLICT","message":"Idempotency-Key conflict"}');
});
