// The whole system through its two composition roots: a grant made over HTTP to Entitlement ends as exactly one SENT
// notification in Notification, with the trace id carried through, a point reservation due now ends as a SENT
// PointsGranted (Entitlement's scheduler, relay and points stream, Notification's points consumer), and both
// processes exit 0 on SIGTERM. And a
// matchmaking event published to JetStream ends as a SENT MatchFound for each of its players.
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import type postgres from "postgres";
import { matchBytes } from "../notification/helpers.ts";
import { type DatabaseFixture, natsUrl, openTestDatabase, uniqueName } from "../support/infra.ts";
import { ENTITLEMENT_MAIN, NOTIFICATION_MAIN } from "../support/serve.ts";
import { waitUntil } from "../support/wait.ts";

setDefaultTimeout(120_000);

const TOKEN = "e2e-token-for-the-pipeline-test-0123456789";
const DEBUG_TOKEN = "e2e-debug-token-0123456789abcdef";

let f: DatabaseFixture;
let sql: postgres.Sql;
const stream = uniqueName("e2e_stream").replaceAll("_", "-");
const durable = uniqueName("e2e_durable").replaceAll("_", "-");
const subject = `${uniqueName("e2e")}.events`;
const advisory = (kind: string) => `$JS.EVENT.ADVISORY.CONSUMER.${kind}.${stream}.${durable}`;
const matches = `${stream}-matches`;
const points = `${stream}-points`;
const streams = [stream, `${stream}-maxdel`, `${stream}-term`, matches, points];
/** Notification's names for this file: its own streams and durables, on the shared NATS. */
const notificationNames = {
  NOTIFICATION_NATS_STREAM: stream,
  NOTIFICATION_NATS_SUBJECT: subject,
  NOTIFICATION_NATS_DURABLE: durable,
  NOTIFICATION_NATS_ADVISORY_SUBJECT: advisory("MAX_DELIVERIES"),
  NOTIFICATION_NATS_ADVISORY_STREAM: streams[1] as string,
  NOTIFICATION_NATS_ADVISORY_DURABLE: `${durable}-maxdel`,
  NOTIFICATION_NATS_TERMINATED_ADVISORY_SUBJECT: advisory("MSG_TERMINATED"),
  NOTIFICATION_NATS_TERMINATED_ADVISORY_STREAM: streams[2] as string,
  NOTIFICATION_NATS_TERMINATED_ADVISORY_DURABLE: `${durable}-term`,
  NOTIFICATION_MATCHMAKING_NATS_STREAM: matches,
  NOTIFICATION_MATCHMAKING_NATS_SUBJECT: `${subject}.matches`,
  NOTIFICATION_MATCHMAKING_NATS_DURABLE: `${durable}-matches`,
  NOTIFICATION_POINTS_NATS_STREAM: points,
  NOTIFICATION_POINTS_NATS_SUBJECT: `${subject}.points`,
  NOTIFICATION_POINTS_NATS_DURABLE: `${durable}-points`,
};
const children: Bun.Subprocess[] = [];

beforeAll(async () => {
  f = await openTestDatabase("e2e", { service: "notification", poolMax: 2 });
  sql = f.sql;
});

afterAll(async () => {
  for (const child of children) child.kill("SIGKILL");
  const nc = await connect({ servers: await natsUrl() });
  const jsm = await jetstreamManager(nc);
  for (const name of streams) await jsm.streams.delete(name).catch(() => {});
  await nc.close();
  await f.close();
});

function start(main: string, env: Record<string, string>, name: string) {
  const child = Bun.spawn(["bun", main, "serve"], {
    env: {
      PATH: process.env.PATH ?? "",
      DATABASE_URL: f.db.url,
      HOST: "127.0.0.1",
      PORT: "0",
      LOG_LEVEL: "info",
      ...env,
    },
    stdout: "pipe",
    stderr: "inherit",
  });
  children.push(child);
  return { child, port: listeningPort(child.stdout, name) };
}

/** Reads the child's JSON log lines until the "<name> listening" line and returns its port. */
async function listeningPort(out: ReadableStream<Uint8Array>, name: string): Promise<number> {
  const reader = out.getReader();
  const pattern = new RegExp(`"port":(\\d+),"msg":"${name} listening"`);
  let text = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`${name} exited before listening:\n${text}`);
    text += new TextDecoder().decode(value);
    const match = pattern.exec(text);
    if (match) {
      reader.releaseLock();
      void out.pipeTo(new WritableStream()).catch(() => {});
      return Number(match[1]);
    }
  }
}

test("a grant over HTTP becomes exactly one SENT notification carrying its trace id", async () => {
  const nats = await natsUrl();
  const digest = new Bun.CryptoHasher("sha256").update(TOKEN).digest("hex");
  const entitlement = start(
    ENTITLEMENT_MAIN,
    {
      NATS_URL: nats,
      ENTITLEMENT_AUTH_TOKENS: `payments:${digest}:read+write`,
      ENTITLEMENT_NATS_STREAM: stream,
      ENTITLEMENT_NATS_SUBJECT: subject,
      ENTITLEMENT_POINTS_NATS_STREAM: points,
      ENTITLEMENT_POINTS_NATS_SUBJECT: `${subject}.points`,
    },
    "entitlement",
  );
  const notification = start(
    NOTIFICATION_MAIN,
    {
      NATS_URL: nats,
      ...notificationNames,
      NOTIFICATION_DEBUG_API_ENABLED: "true",
      NOTIFICATION_DEBUG_API_TOKEN: DEBUG_TOKEN,
    },
    "notification",
  );
  const entitlementUrl = `http://127.0.0.1:${await entitlement.port}`;
  const notificationUrl = `http://127.0.0.1:${await notification.port}`;
  for (const base of [entitlementUrl, notificationUrl]) {
    await waitUntil(
      async () => (await fetch(`${base}/readyz`).catch(() => undefined))?.status === 200,
      `${base}/readyz`,
      60_000,
    );
  }

  const user = uniqueName("e2e_user");
  const traceId = `trace-${crypto.randomUUID()}`;
  const grant = await fetch(`${entitlementUrl}/v1/entitlements/grants`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "idempotency-key": `e2e-${user}`,
      "x-trace-id": traceId,
      authorization: `Bearer ${TOKEN}`,
    },
    body: JSON.stringify({
      user_id: user,
      stock_keeping_unit: "e2e.sku.basic",
      reason: "purchase",
      purchase_id: "p-1",
    }),
  });
  expect(grant.status, "the grant is accepted").toBe(200);
  expect(await grant.json()).toMatchObject({ user_id: user, status: "ACTIVE", version: 0 });

  const sent = await waitUntil(
    async () => {
      const rows = await sql`
        select n.status, n.event_id::text, n.payload_json ->> 'trace_id' as trace_id, n.type
        from notification.notifications n where n.user_id = ${user}`;
      return rows.length === 1 && rows[0]?.status === "SENT" ? rows[0] : undefined;
    },
    "the notification to be SENT",
    60_000,
  );
  expect(sent.type).toBe("EntitlementGranted");
  expect(sent.trace_id, "the X-Trace-Id of the grant reaches the notification").toBe(traceId);

  const [outbox] = await sql`
    select status, event_id::text from entitlement.outbox_events where aggregate_key = ${`${user}:e2e.sku.basic`}`;
  expect(outbox, "the outbox event is published and is the one notified").toEqual({
    status: "PUBLISHED",
    event_id: sent.event_id,
  });
  const processed = await sql`select 1 from notification.processed_events where event_id = ${sent.event_id}::uuid`;
  expect(processed).toHaveLength(1);

  const inbox = await fetch(`${notificationUrl}/debug/notification/inbox/${user}`, {
    headers: { authorization: `Bearer ${DEBUG_TOKEN}` },
  });
  const body = (await inbox.json()) as { notifications: { status: string; event_id: string }[] };
  expect(body.notifications.map((n) => [n.status, n.event_id])).toEqual([["SENT", sent.event_id]]);

  // A while later there is still exactly one notification: nothing is delivered twice.
  await Bun.sleep(1_000);
  const [count] = await sql`select count(*)::int as n from notification.notifications where user_id = ${user}`;
  expect(count?.n, "exactly one notification per event").toBe(1);

  // A point reservation due now: Entitlement's scheduler executes it, its relay publishes the PointsEvent on the
  // points stream, Notification turns it into the user's PointsGranted.
  const reserved = await fetch(`${entitlementUrl}/v1/points/reservations`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "idempotency-key": `e2e-points-${user}`,
      authorization: `Bearer ${TOKEN}`,
    },
    body: JSON.stringify({ user_id: user, point_amount: 40, execute_at: new Date().toISOString(), reason: "e2e" }),
  });
  expect(reserved.status, "the reservation is accepted").toBe(201);
  const { reservation_id } = (await reserved.json()) as { reservation_id: string };
  const granted = await waitUntil(
    async () => {
      const rows = await sql`select status, payload_json from notification.notifications
        where user_id = ${user} and type = 'PointsGranted'`;
      return rows.length === 1 && rows[0]?.status === "SENT" ? rows[0] : undefined;
    },
    "the PointsGranted notification to be SENT",
    60_000,
  );
  expect(granted.payload_json).toEqual({ reservation_id, point_amount: 40, balance_after: 40 });

  entitlement.child.kill("SIGTERM");
  notification.child.kill("SIGTERM");
  expect(await entitlement.child.exited, "entitlement drains and exits 0").toBe(0);
  expect(await notification.child.exited, "notification drains and exits 0").toBe(0);
});

test("a match published to JetStream becomes a SENT MatchFound for each player, once", async () => {
  const notification = start(NOTIFICATION_MAIN, { NATS_URL: await natsUrl(), ...notificationNames }, "notification");
  const base = `http://127.0.0.1:${await notification.port}`;
  // Ready means both consumers read: the match is consumed even though this process never saw its stream before.
  await waitUntil(async () => (await fetch(`${base}/readyz`).catch(() => undefined))?.status === 200, "readyz", 60_000);
  const nc = await connect({ servers: await natsUrl() });
  try {
    const js = jetstream(nc);
    const players = [uniqueName("player"), uniqueName("player")];
    const eventId = crypto.randomUUID();
    const body = matchBytes({ eventId, matchId: `match-${eventId}`, mode: "rank", userIds: players });
    await js.publish(`${subject}.matches`, body, { msgID: eventId });
    const sent = await waitUntil(
      async () => {
        const rows = await sql`
          select user_id, status, type, payload_json from notification.notifications
          where event_id = ${eventId}::uuid order by user_id`;
        return rows.length === 2 && rows.every((r) => r.status === "SENT") ? rows : undefined;
      },
      "both players' MatchFound to be SENT",
      60_000,
    );
    expect(sent.map((r) => [r.user_id, r.type])).toEqual([...players].sort().map((p) => [p, "MatchFound"]));
    expect(sent[0]?.payload_json).toEqual({ match_id: `match-${eventId}`, mode: "rank", user_ids: players });
    const processed = await sql`select 1 from notification.processed_events where event_id = ${eventId}::uuid`;
    expect(processed, "processed_events holds the event id").toHaveLength(1);

    // The original's E9 re-publish, made strict: the raw body again without Nats-Msg-Id, and wait until the
    // consumer has acked it before counting (the original counted before it was even consumed).
    const again = await js.publish(`${subject}.matches`, body);
    expect(again.duplicate, "without Nats-Msg-Id JetStream stores it again").toBe(false);
    const jsm = await jetstreamManager(nc);
    await waitUntil(
      async () => {
        const info = await jsm.consumers.info(matches, `${durable}-matches`);
        return info.ack_floor.stream_seq >= again.seq ? true : undefined;
      },
      "the copy to be consumed and acked",
      60_000,
    );
    const [count] =
      await sql`select count(*)::int as n from notification.notifications where event_id = ${eventId}::uuid`;
    expect(count?.n, "the copy adds nothing").toBe(2);
  } finally {
    await nc.close();
    notification.child.kill("SIGTERM");
  }
  expect(await notification.child.exited, "notification drains and exits 0").toBe(0);
});
