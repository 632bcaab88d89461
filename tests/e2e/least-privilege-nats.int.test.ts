// The shipped least-privilege broker configuration, run as it is: a private nats-server started with
// `-c deploy/nats/least-privilege.conf` and mutual TLS on the command line (`--tlsverify`, certificates made here).
// Both services, each with its own user and client certificate and the default stream names, carry a grant, a point
// reservation and a match (published by the matchmaking user) to SENT notifications without a single permissions
// violation in the server's log; a forged EntitlementEvent is refused to Notification's user and to any other user
// (on the event subject, and into Notification's inbox), and never becomes a notification; a client without a password,
// or without a client certificate, is turned away; the NATS DLQ replay needs the operator's user. Each user subscribes
// under its own inbox prefix alone: on the wire (the server's /connz) every subscription of a service is under its
// NATS_INBOX_PREFIX default (Notification's player signals aside), and a subscription to another user's inbox, or to _INBOX.>, is refused.
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { type ConnectionOptions, connect } from "@nats-io/transport-node";
import type postgres from "postgres";
import { eventBytes, matchBytes } from "../notification/helpers.ts";
import { type CertificatePair, createTestCa } from "../support/certificates.ts";
import { postGrant, waitReady } from "../support/grant-flow.ts";
import { type DatabaseFixture, openTestDatabase, uniqueName } from "../support/infra.ts";
import {
  connectOutcome,
  natsServerBinary,
  type PrivateNats,
  privateNats,
  subscribeOutcome,
} from "../support/nats-server.ts";
import { freePort, runCommand } from "../support/process.ts";
import { ENTITLEMENT_MAIN, NOTIFICATION_MAIN, type ServedProcess, serve } from "../support/serve.ts";
import { waitUntil } from "../support/wait.ts";

setDefaultTimeout(180_000);

const CONFIG = new URL("../../deploy/nats/least-privilege.conf", import.meta.url).pathname;
/** The demo passwords whose bcrypt hashes the configuration carries (marked DEMO there). */
const PASSWORDS = {
  entitlement: "entitlement-DEMO-password-change-me",
  notification: "notification-DEMO-password-change-me",
  "notification-ops": "notification-ops-DEMO-password-change-me",
  matchmaking: "matchmaking-DEMO-password-change-me",
  intruder: "intruder-DEMO-password-change-me",
};
type User = keyof typeof PASSWORDS;
/** Each user's inbox prefix, the only subjects it may subscribe to (the services' are their NATS_INBOX_PREFIX defaults). */
const INBOX: Record<User, string> = {
  entitlement: "_INBOX_entitlement",
  notification: "_INBOX_notification",
  "notification-ops": "_INBOX_notification_ops",
  matchmaking: "_INBOX_matchmaking",
  intruder: "_INBOX_intruder",
};
/** Beyond its inbox, the one subject each service subscribes to: Notification's replicas tell each other of players. */
const SIGNALS: Record<"entitlement" | "notification", string[]> = {
  entitlement: [],
  notification: ["notification.players"],
};
/** Subscriptions this file attempts that must be refused: another user's inbox, and the client default for all. */
const FOREIGN_INBOXES: [User, string][] = [
  ["intruder", "_INBOX_notification.>"],
  ["intruder", "_INBOX_entitlement.>"],
  ["entitlement", "_INBOX_notification.>"],
  ["notification", "_INBOX_entitlement.>"],
  ["notification", "_INBOX_notification_ops.>"],
  ["matchmaking", "_INBOX_notification.>"],
  ...(Object.keys(INBOX) as User[]).map((user): [User, string] => [user, "_INBOX.>"]),
];

const dir = mkdtempSync(join(tmpdir(), "least-privilege-nats-"));
const serverLog = join(dir, "nats-server.log");
const monitorPort = freePort();
let ca: string;
let clients: Record<"entitlement" | "notification" | "tester", CertificatePair>;
let broker: PrivateNats;
let f: DatabaseFixture;
let sql: postgres.Sql;
const services: ServedProcess[] = [];

beforeAll(async () => {
  if (!natsServerBinary) throw new Error("nats-server is required for this test");
  const authority = await createTestCa(dir);
  ca = authority.ca;
  const server = await authority.server("server");
  clients = {
    entitlement: await authority.client("entitlement"),
    notification: await authority.client("notification"),
    tester: await authority.client("tester"),
  };
  broker = privateNats("least-privilege", {
    scheme: "tls",
    args: ["-c", CONFIG, "-l", serverLog, "-m", String(monitorPort), "--tlsverify"].concat([
      "--tlscert",
      server.cert,
      "--tlskey",
      server.key,
      "--tlscacert",
      ca,
    ]),
  });
  await broker.start();
  f = await openTestDatabase("least_priv_nats", { service: "notification", poolMax: 2 });
  sql = f.sql;
  await startServices();
});

afterAll(async () => {
  for (const s of services) s.child.kill("SIGKILL");
  await f?.close();
  await broker?.dispose();
  rmSync(dir, { recursive: true, force: true });
});

/** A test client of the broker: TLS with the tester's certificate, `user` with its demo password (if any). */
const asUser = (user: User | undefined, extra: Partial<ConnectionOptions> = {}): ConnectionOptions => ({
  servers: broker.url.replace("tls://", "nats://"),
  tls: { caFile: ca, certFile: clients.tester.cert, keyFile: clients.tester.key },
  ...(user ? { user, pass: PASSWORDS[user], inboxPrefix: INBOX[user] } : {}),
  ...extra,
});

/** The variables a service (or its operator command) needs to reach this broker as `user`. */
const natsEnv = (user: User, certificate: CertificatePair) => ({
  DATABASE_URL: f.db.url,
  NATS_URL: broker.url,
  NATS_USER: user,
  NATS_PASSWORD: PASSWORDS[user],
  NATS_TLS_CA: ca,
  NATS_TLS_CERT: certificate.cert,
  NATS_TLS_KEY: certificate.key,
});

/** The refusals this file provokes on purpose; any other permissions violation is a permission the services lack. */
const PROVOKED = new Set([
  "Publish intruder entitlement.events",
  "Publish intruder _INBOX_notification.forged",
  "Publish notification entitlement.events",
  "Publish notification $JS.API.STREAM.MSG.GET.entitlement-events",
  ...FOREIGN_INBOXES.map(([user, subject]) => `Subscription ${user} ${subject}`),
]);

/** Each "Publish Violation" or "Subscription Violation" the server logged, as `kind user subject`. */
function violations(): string[] {
  const text = readFileSync(serverLog, "utf8");
  return [...text.matchAll(/(Publish|Subscription) Violation - User "([^"]+)", Subject "([^"]+)"/g)].map(
    (m) => `${m[1]} ${m[2]} ${m[3]}`,
  );
}

let entitlementUrl: string;

/** Entitlement, then Notification: under this configuration Notification may not create Entitlement's streams. */
async function startServices(): Promise<void> {
  const entitlement = serve(ENTITLEMENT_MAIN, "entitlement", {
    ...natsEnv("entitlement", clients.entitlement),
    ENTITLEMENT_AUTH_DISABLED: "true",
  });
  services.push(entitlement);
  entitlementUrl = `http://127.0.0.1:${await entitlement.port}`;
  const nc = await connect(asUser("entitlement"));
  const jsm = await jetstreamManager(nc);
  for (const stream of ["entitlement-events", "points-events"])
    await waitUntil(() => jsm.streams.info(stream).then(Boolean, () => false), `Entitlement's ${stream}`, 60_000);
  await nc.close();
  const notification = serve(NOTIFICATION_MAIN, "notification", natsEnv("notification", clients.notification));
  services.push(notification);
  const notificationUrl = `http://127.0.0.1:${await notification.port}`;
  await waitReady(notificationUrl, "notification ready: its durables bound within its permissions", 90_000).catch(
    (error: Error) => {
      throw new Error(`${error.message}; the server's permissions violations: ${violations().join(", ") || "none"}`);
    },
  );
}

const notificationOf = async (userId: string) =>
  (await sql`select type, status from notification.notifications where user_id = ${userId}`) as unknown as {
    type: string;
    status: string;
  }[];

test("a client without a password, or without a client certificate, is turned away", async () => {
  expect(await connectOutcome(asUser(undefined)), "TLS with a certificate but no password").toMatch(/authoriz/i);
  expect(await connectOutcome(asUser("entitlement", { pass: "not-the-password" })), "a wrong password").toMatch(
    /authoriz/i,
  );
  expect(
    await connectOutcome(asUser("entitlement", { tls: { caFile: ca } })),
    "the right password without a client certificate (mutual TLS)",
  ).not.toBe("connected");
  expect(await connectOutcome(asUser("entitlement")), "the control: certificate and password").toBe("connected");
});

test("each producer with its own user: a grant, a point reservation and a match become SENT notifications", async () => {
  const user = uniqueName("lp_user");
  const grant = await postGrant(entitlementUrl, { user, sku: "lp.sku", key: `lp-${user}` });
  expect(grant.status).toBe(200);
  const reserved = await fetch(`${entitlementUrl}/v1/points/reservations`, {
    method: "POST",
    headers: { "content-type": "application/json", "idempotency-key": `lp-points-${user}` },
    body: JSON.stringify({ user_id: user, point_amount: 7, execute_at: new Date().toISOString(), reason: "lp" }),
  });
  expect(reserved.status).toBe(201);
  const nc = await connect(asUser("matchmaking"));
  const eventId = crypto.randomUUID();
  await jetstream(nc).publish("matchmaking.events", matchBytes({ eventId, matchId: eventId, userIds: [user] }));
  await nc.close();
  await waitUntil(
    async () => {
      const rows = await notificationOf(user);
      return rows.length === 3 && rows.every((r) => r.status === "SENT");
    },
    "the grant's, the points' and the match's notifications SENT through the least-privilege broker",
    60_000,
  );
  const types = (await notificationOf(user)).map((r) => r.type).sort();
  expect(types).toEqual(["EntitlementGranted", "MatchFound", "PointsGranted"]);
  expect(
    violations().filter((v) => !PROVOKED.has(v)),
    "the services did everything they do within their permissions",
  ).toEqual([]);
});

/** The subjects of the live subscriptions of the connections named `name`, as the server lists them (/connz). */
async function subscriptionsOf(name: string): Promise<string[]> {
  const url = `http://127.0.0.1:${monitorPort}/connz?subs=detail&auth=true&limit=1024`;
  const connz = (await (await fetch(url)).json()) as {
    connections: { name?: string; authorized_user?: string; subscriptions_list_detail?: { subject: string }[] }[];
  };
  const connections = connz.connections.filter((c) => c.name === name);
  expect(
    connections.map((c) => c.authorized_user),
    `${name}'s connection, as its own user`,
  ).toEqual([name]);
  return connections.flatMap((c) => (c.subscriptions_list_detail ?? []).map((d) => d.subject));
}

test("on the wire, each service subscribes under its own inbox prefix only", async () => {
  for (const service of ["entitlement", "notification"] as const) {
    const subjects = await subscriptionsOf(service);
    // Entitlement's publish acknowledgements and Notification's pulls (one inbox per consumer) are live by now.
    expect(subjects.length, `${service} has reply subscriptions after the flow`).toBeGreaterThan(0);
    expect(
      subjects.filter((s) => !s.startsWith(`${INBOX[service]}.`) && !SIGNALS[service].includes(s)),
      `every subscription of ${service} is under ${INBOX[service]}, or its replicas' signals`,
    ).toEqual([]);
  }
});

/** "subscribed", or the error the server answered a subscription of `user` to `subject` with. */
async function subscribeAs(user: User, subject: string): Promise<string> {
  const nc = await connect(asUser(user));
  try {
    return await subscribeOutcome(nc, subject);
  } finally {
    await nc.close();
  }
}

test("no user may subscribe to another's inbox, nor to _INBOX.>, where replies and pulled events go", async () => {
  for (const [user, subject] of FOREIGN_INBOXES)
    expect(await subscribeAs(user, subject), `${user} subscribing to ${subject}`).toMatch(/permissions violation/i);
  for (const user of Object.keys(INBOX) as User[])
    expect(await subscribeAs(user, `${INBOX[user]}.>`), `the control: ${user} in its own inbox`).toBe("subscribed");
  const refused = violations().filter((v) => v.startsWith("Subscription "));
  for (const [user, subject] of FOREIGN_INBOXES) expect(refused).toContain(`Subscription ${user} ${subject}`);
});

test("a forged EntitlementEvent is refused to Notification's user and to any other, and notifies nobody", async () => {
  const forge = async (user: User) => {
    const nc = await connect(asUser(user));
    try {
      const victim = uniqueName(`forged_by_${user.replace("-", "_")}`);
      const outcome = await jetstream(nc)
        .publish("entitlement.events", eventBytes({ userId: victim }), { timeout: 5_000 })
        .then(
          () => "published",
          (error: Error) => error.message,
        );
      return { victim, outcome };
    } finally {
      await nc.close();
    }
  };
  // Nor into a client's inbox, where JetStream delivers pulled messages: what arrives there would be taken as delivered.
  const intruder = await connect(asUser("intruder"));
  const intoInbox = await intruder.request("_INBOX_notification.forged", eventBytes(), { timeout: 5_000 }).then(
    () => "answered",
    (error: Error) => error.message,
  );
  await intruder.close();
  expect(intoInbox, "publishing into an inbox").toMatch(/permissions violation/i);
  const byIntruder = await forge("intruder");
  const byNotification = await forge("notification");
  expect(byIntruder.outcome, "any other user").toMatch(/permissions violation/i);
  expect(byNotification.outcome, "Notification's own user").toMatch(/permissions violation/i);
  // The control: the same kind of message from the one user allowed to publish it does become a notification, so
  // the refusals above are the permissions at work and not a message Notification would have ignored anyway.
  const control = await forge("entitlement");
  expect(control.outcome).toBe("published");
  await waitUntil(
    async () => (await notificationOf(control.victim))[0]?.status === "SENT",
    "the control event consumed",
    60_000,
  );
  expect(await notificationOf(byIntruder.victim), "nothing from the intruder's attempt").toEqual([]);
  expect(await notificationOf(byNotification.victim), "nothing from Notification's attempt").toEqual([]);
  expect(violations()).toContain("Publish intruder entitlement.events");
  expect(violations()).toContain("Publish notification entitlement.events");
});

test("the NATS DLQ replay is refused to Notification's user and works with the operator's", async () => {
  // An event of Entitlement's, recorded as if JetStream had given up on it.
  const nc = await connect(asUser("entitlement"));
  const { seq } = await jetstream(nc).publish("entitlement.events", eventBytes({ userId: uniqueName("lp_replay") }));
  await nc.close();
  await sql`insert into notification.notification_nats_dlq (stream_seq, stream, consumer, kind, deliveries)
    values (${seq}, 'entitlement-events', 'notification-entitlement-consumer', 'MAX_DELIVERIES', 10)`;
  const replay = (user: User, certificate: CertificatePair, extra: Record<string, string> = {}) =>
    runCommand(["bun", NOTIFICATION_MAIN, "nats-dlq", "replay", String(seq)], {
      env: { PATH: process.env.PATH ?? "", ...natsEnv(user, certificate), ...extra },
    });
  // With the service's own inbox prefix, so what refuses it is the permission to read a stream's message.
  const asService = await replay("notification", clients.notification, { NATS_INBOX_PREFIX: INBOX.notification });
  expect(asService.code, `${asService.stdout}${asService.stderr}`).not.toBe(0);
  expect(violations()).toContain("Publish notification $JS.API.STREAM.MSG.GET.entitlement-events");
  // Without NATS_INBOX_PREFIX: the command's own default is the operator user's inbox.
  const asOperator = await replay("notification-ops", clients.tester);
  expect(asOperator.code, `${asOperator.stdout}${asOperator.stderr}`).toBe(0);
  expect(asOperator.stdout).toContain(`replayed stream_seq ${seq} of entitlement-events to entitlement.events`);
});

test("the services drain and exit 0, and no password of theirs is in their logs", async () => {
  for (const s of services) s.child.kill("SIGTERM");
  for (const s of services) expect(await s.child.exited, "drains and exits 0").toBe(0);
  const text = (await Promise.all(services.map((s) => s.output))).join("\n");
  expect(text, "the services logged their NATS connection").toContain("connected to NATS");
  for (const password of Object.values(PASSWORDS))
    expect(text, "no log line carries a password").not.toContain(password);
  expect(text, "no permission error reached the services").not.toMatch(/permissions violation/i);
  expect(
    violations().filter((v) => !PROVOKED.has(v)),
    "no permission was missing, start to stop",
  ).toEqual([]);
});
