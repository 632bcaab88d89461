// A rolling upgrade as it runs: the previous release's built executables (from git, previous-build.ts) serve beside
// this tree's on one database this tree migrated, each service twice, started once. Grants go through both
// Entitlements; both Notifications consume one durable, so every grant is notified exactly once; a player's inbox
// reads alike through either; and a reply stored by either Entitlement (a grant's, the points commands') is replayed
// by the other byte for byte.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import postgres from "postgres";
import { tokenEntryLine } from "../../src/shared/auth/tokens.ts";
import { builtBinary, freePort, waitForOk } from "../ship/support.ts";
import { startTestIdp, type TestIdp } from "../support/idp.ts";
import { natsUrl, postgresAdminUrl, uniqueName } from "../support/infra.ts";
import { deletePipelineStreams, pipelineNatsNames } from "../support/nats-names.ts";
import { runCommand } from "../support/process.ts";
import { waitUntil } from "../support/wait.ts";
import { previousExecutables } from "./previous-build.ts";
import { PREVIOUS_COMMIT, previousCommitId } from "./previous-source.ts";

setDefaultTimeout(60_000);
const BUILD_TIMEOUT = 600_000;
const AUDIENCE = "https://players.upgrade.test";
const TOKEN = "upgrade-token-0123456789abcdef";
const commit = previousCommitId();

const database = uniqueName("upgrade_bin");
const stream = uniqueName("upgrade").replaceAll("_", "-");
const durable = `${stream}-durable`;
type Release = "previous" | "current";
const RELEASES: Release[] = ["previous", "current"];
const children: Bun.Subprocess[] = [];
const entitlement: Record<Release, string> = { previous: "", current: "" };
const notification: Record<Release, string> = { previous: "", current: "" };
let admin: postgres.Sql;
let sql: postgres.Sql;
let idp: TestIdp;

function environment(url: string, nats: string): Record<string, string> {
  return {
    PATH: "/usr/sbin:/usr/bin:/sbin:/bin",
    LOG_LEVEL: "warn",
    DATABASE_URL: url,
    NATS_URL: nats,
    ...pipelineNatsNames(stream, durable),
    HOST: "127.0.0.1",
    ENTITLEMENT_AUTH_TOKENS: tokenEntryLine("shop", TOKEN, "read+write"),
    NOTIFICATION_PLAYER_JWT_ISSUER: idp.issuer,
    NOTIFICATION_PLAYER_JWT_AUDIENCE: AUDIENCE,
    NOTIFICATION_PLAYER_NATS_SUBJECT: `${stream}.players`,
    NOTIFICATION_ENDPOINT_SECRET_KEY: "ab".repeat(32),
  };
}

/** Starts one executable's `serve` on a free port; resolves its base URL once /readyz answers. */
async function serve(binary: string, env: Record<string, string>): Promise<string> {
  const port = await freePort();
  const child = Bun.spawn([binary, "serve"], {
    env: { ...env, PORT: String(port) },
    stdout: "ignore",
    stderr: "inherit",
  });
  children.push(child);
  const base = `http://127.0.0.1:${port}`;
  await waitForOk(`${base}/readyz`, 60_000, () => child.exitCode === null);
  return base;
}

async function migrate(binary: string, env: Record<string, string>): Promise<void> {
  const r = await runCommand([binary, "migrate"], { env });
  expect(r.code, `${binary} migrate: ${r.stderr}`).toBe(0);
}

beforeAll(async () => {
  const [previous, currentEntitlement, currentNotification] = await Promise.all([
    previousExecutables(commit),
    builtBinary("entitlement"),
    builtBinary("notification"),
  ]);
  idp = await startTestIdp();
  const adminUrl = await postgresAdminUrl();
  admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  await admin.unsafe(`create database "${database}"`);
  const url = new URL(adminUrl);
  url.pathname = `/${database}`;
  const env = environment(url.toString(), await natsUrl());
  // The deployed release's schema first, then this tree's upgrade of it.
  for (const binary of [previous.entitlement, previous.notification, currentEntitlement, currentNotification]) {
    await migrate(binary, env);
  }
  [entitlement.previous, entitlement.current, notification.previous, notification.current] = await Promise.all([
    serve(previous.entitlement, env),
    serve(currentEntitlement, env),
    serve(previous.notification, env),
    serve(currentNotification, env),
  ]);
  sql = postgres(url.toString(), { max: 2, onnotice: () => {} });
}, BUILD_TIMEOUT);

afterAll(async () => {
  for (const child of children) child.kill();
  await Promise.all(children.map((child) => child.exited));
  await idp?.close();
  await sql?.end();
  await deletePipelineStreams(await natsUrl(), stream);
  await admin?.unsafe(`drop database if exists "${database}" with (force)`);
  await admin?.end();
}, 30_000);

/** A POST of the Entitlement API through one release's Entitlement, under an Idempotency-Key. */
function post(release: Release, path: string, key: string, body?: unknown): Promise<Response> {
  return fetch(`${entitlement[release]}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json", "idempotency-key": key },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

const points = (release: Release, path: string, key: string, body?: unknown) =>
  post(release, `/v1/points/reservations${path}`, key, body);

const grant = (release: Release, user: string, key: string, sku = "sword") =>
  post(release, "/v1/entitlements/grants", key, {
    user_id: user,
    stock_keeping_unit: sku,
    reason: "purchase",
    purchase_id: `p-${key}`,
  });

/** Which release stores a reply and which replays it, both ways round. */
const STORED_THEN_REPLAYED = [
  ["previous", "current"],
  ["current", "previous"],
] as const;

async function inbox(release: Release, user: string): Promise<{ items: { notification_id: string }[] }> {
  const now = Math.floor(Date.now() / 1000);
  const token = await idp.forge({ iss: idp.issuer, aud: AUDIENCE, sub: user, iat: now, exp: now + 600 });
  const response = await fetch(`${notification[release]}/v1/me/notifications`, {
    headers: { authorization: `Bearer ${token}` },
  });
  expect(response.status, `${release} inbox of ${user}`).toBe(200);
  return (await response.json()) as { items: { notification_id: string }[] };
}

describe(`the previous release (${PREVIOUS_COMMIT}) beside this one`, () => {
  const users = Array.from({ length: 8 }, (_, i) => uniqueName(`player${i}`));

  test("both Notifications pull from the one durable", async () => {
    const nc = await connect({ servers: await natsUrl() });
    try {
      const jsm = await jetstreamManager(nc);
      const waiting = async () => (await jsm.consumers.info(stream, durable)).num_waiting >= 2 || undefined;
      await waitUntil(waiting, "two pull requests waiting on the durable, one of each Notification");
    } finally {
      await nc.close();
    }
  });

  test("grants through both Entitlements are each notified once, and read alike through either Notification", async () => {
    for (const [i, user] of users.entries()) {
      const response = await grant(RELEASES[i % 2] as Release, user, `${user}-grant`);
      expect(response.status, `grant of ${user} through the ${RELEASES[i % 2]} release`).toBe(200);
    }
    const stored = async () => {
      const rows = await sql<{ user_id: string; n: number }[]>`
        select user_id, count(*)::int as n from notification.notifications
        where user_id = any(${users}::text[]) group by user_id`;
      return rows.length === users.length ? Object.fromEntries(rows.map((r) => [r.user_id, r.n])) : undefined;
    };
    await waitUntil(stored, "a notification for every grant");
    // A second copy would be stored within the consumers' next fetch; half a second covers several.
    await Bun.sleep(500);
    expect(await stored(), "exactly one notification per grant, whichever Notification stored it").toEqual(
      Object.fromEntries(users.map((user) => [user, 1])),
    );
    for (const user of users) {
      const previous = await inbox("previous", user);
      const current = await inbox("current", user);
      expect(previous.items, `${user}'s inbox has the grant`).toHaveLength(1);
      expect(
        current.items.map((n) => n.notification_id),
        `${user}'s inbox alike through either`,
      ).toEqual(previous.items.map((n) => n.notification_id));
    }
  });

  test("a reply stored by either Entitlement is replayed by the other byte for byte", async () => {
    for (const [first, second] of STORED_THEN_REPLAYED) {
      const user = uniqueName(`replay-${first}`);
      for (const [key, sku] of [
        [`${user}-a`, "sword"],
        [`${user}-b`, "sword"],
      ]) {
        const stored = await grant(first, user, key as string, sku);
        const replayed = await grant(second, user, key as string, sku);
        const label = `${key}: stored by the ${first} release (${stored.status}), replayed by the ${second}`;
        expect(replayed.status, label).toBe(stored.status);
        expect(await replayed.text(), label).toBe(await stored.text());
      }
    }
  });

  test("the points replies stored by either Entitlement are replayed by the other byte for byte", async () => {
    for (const [first, second] of STORED_THEN_REPLAYED) {
      const user = uniqueName(`points-${first}`);
      const rich = `${user}-rich`;
      await sql`insert into entitlement.point_balances (user_id, balance, updated_at)
                values (${rich}, 9007199254740990, now())`;
      const later = new Date(Date.now() + 3_600_000).toISOString();
      const reserve = (u: string) => ({ user_id: u, point_amount: 5, execute_at: later, reason: "gift" });
      const reserved = await points(first, "", `${user}-r`, reserve(user));
      const id = ((await reserved.clone().json()) as { reservation_id: string }).reservation_id;
      const steps: [string, string, unknown, number][] = [
        ["", `${user}-r`, reserve(user), 201],
        ["", `${user}-rich`, reserve(rich), 409],
        [`/${id}/cancel`, `${user}-c`, undefined, 200],
        [`/${id}/cancel`, `${user}-c2`, undefined, 409],
      ];
      for (const [path, key, body, status] of steps) {
        const stored = key === `${user}-r` ? reserved : await points(first, path, key, body);
        const replayed = await points(second, path, key, body);
        const label = `${key}: stored by the ${first} release, replayed by the ${second}`;
        expect(stored.status, label).toBe(status);
        expect(replayed.status, label).toBe(status);
        expect(await replayed.text(), label).toBe(await stored.text());
      }
    }
  });
});
