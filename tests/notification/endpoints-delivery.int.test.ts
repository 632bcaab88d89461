import { afterEach, describe, expect, setDefaultTimeout, test } from "bun:test";
import { Webhook } from "standardwebhooks";
import type { NotificationType } from "../../src/notification/intake/consumer/handler.ts";
import { createLogger } from "../../src/shared/logger.ts";
import { Waker } from "../../src/shared/runtime.ts";
import { useTestDatabase } from "../support/infra.ts";
import { waitUntil } from "../support/wait.ts";
import { endpointApp, runEndpointWorker, startReceiver, storeNotifications } from "./endpoints.helpers.ts";

setDefaultTimeout(60_000);

const f = useTestDatabase("notif_endpoints_delivery", { service: "notification" });
const granted = startReceiver();
const matches = startReceiver();
const everything = startReceiver();
const receivers = [granted, matches, everything];

let stops: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const stop of stops) await stop();
  stops = [];
  await f.sql`delete from webhook_endpoints`;
  for (const r of receivers) {
    r.hits = [];
    r.answer = () => new Response("ok");
  }
});

function start(options: Parameters<typeof runEndpointWorker>[1] = {}) {
  const waker = options.waker ?? new Waker();
  const worker = runEndpointWorker(f.sql, { ...options, waker });
  stops.push(worker.stop);
  return { ...endpointApp(f.sql, { waker }), worker };
}

/** Stores notifications and wakes this process's worker, as the consumer does after its commit. */
async function store(drafts: { type?: NotificationType }[], waker?: Waker): Promise<string[]> {
  const ids = await storeNotifications(f.sql, drafts);
  waker?.wake();
  return ids;
}

const hitsFor = (r: { hits: { headers: Record<string, string> }[] }, id: string) =>
  r.hits.filter((h) => h.headers["webhook-id"] === id);

describe("delivery to registered endpoints", () => {
  test("each notification goes to every enabled endpoint subscribed to its type, signed with that endpoint's secret", async () => {
    const { call, worker } = start();
    const a = await call("POST", "/v1/webhook-endpoints", { url: granted.url, event_types: ["EntitlementGranted"] });
    const b = await call("POST", "/v1/webhook-endpoints", { url: matches.url, event_types: ["MatchFound"] });
    const c = await call("POST", "/v1/webhook-endpoints", { url: everything.url });
    await call("POST", "/v1/webhook-endpoints", { url: everything.url, enabled: false });
    const [grant, match] = await store([{ type: "EntitlementGranted" }, { type: "MatchFound" }], worker.waker);
    await waitUntil(
      async () => (everything.hits.length >= 2 && granted.hits.length >= 1 && matches.hits.length >= 1) || undefined,
      "deliveries",
    );
    expect(granted.hits.map((h) => h.headers["webhook-id"])).toEqual([grant as string]);
    expect(matches.hits.map((h) => h.headers["webhook-id"])).toEqual([match as string]);
    expect(everything.hits.map((h) => h.headers["webhook-id"]).sort()).toEqual([grant, match].sort() as string[]);
    for (const [r, secret] of [
      [granted, a.body.secret],
      [matches, b.body.secret],
      [everything, c.body.secret],
    ] as const) {
      for (const hit of r.hits) expect(() => new Webhook(secret).verify(hit.body, hit.headers)).not.toThrow();
    }
    expect(() =>
      new Webhook(c.body.secret).verify(granted.hits[0]?.body ?? "", granted.hits[0]?.headers ?? {}),
    ).toThrow();
    const [notification] = await f.sql`select status from notifications where notification_id = ${grant as string}`;
    expect(notification?.status, "the configured channel's row is not the endpoints' business").toBe("PENDING");
    await waitUntil(async () => {
      const [row] = await f.sql<
        { n: number }[]
      >`select count(*)::int as n from webhook_deliveries where status = 'SENT'`;
      return row?.n === 4 || undefined;
    }, "4 deliveries SENT");
  });

  test("during a rotation's overlap each request carries both signatures, each verifiable alone", async () => {
    const { call, worker } = start();
    const created = await call("POST", "/v1/webhook-endpoints", { url: granted.url });
    const rotated = await call("POST", `/v1/webhook-endpoints/${created.body.endpoint_id}/secret/rotate`, {
      overlap: "1h",
    });
    const [id] = await store([{}], worker.waker);
    await waitUntil(async () => hitsFor(granted, id as string)[0], "the delivery");
    const hit = hitsFor(granted, id as string)[0] as { body: string; headers: Record<string, string> };
    expect(hit.headers["webhook-signature"]?.split(" ")).toHaveLength(2);
    expect(hit.headers["webhook-signature"]).toMatch(/^v1,\S+ v1,\S+$/);
    expect(new Webhook(rotated.body.secret).verify(hit.body, hit.headers)).toMatchObject({ notification_id: id });
    expect(new Webhook(created.body.secret).verify(hit.body, hit.headers)).toMatchObject({ notification_id: id });

    await call("POST", `/v1/webhook-endpoints/${created.body.endpoint_id}/secret/rotate`, { overlap: "0s" });
    const [next] = await store([{}], worker.waker);
    await waitUntil(async () => hitsFor(granted, next as string)[0], "the delivery after a rotation without overlap");
    const last = hitsFor(granted, next as string)[0] as { body: string; headers: Record<string, string> };
    expect(last.headers["webhook-signature"]?.split(" ")).toHaveLength(1);
    expect(() => new Webhook(rotated.body.secret).verify(last.body, last.headers)).toThrow();
  });

  test("a second rotation keeps the first old secret until its own overlap ends: every live secret signs", async () => {
    const { call, worker } = start();
    const created = await call("POST", "/v1/webhook-endpoints", { url: granted.url });
    const endpoint = created.body.endpoint_id as string;
    const rotate = (overlap: string) => call("POST", `/v1/webhook-endpoints/${endpoint}/secret/rotate`, { overlap });
    const second = await rotate("2h");
    const third = await rotate("1h");
    const [id] = await store([{}], worker.waker);
    const hit = await waitUntil(async () => granted.hits.find((h) => h.headers["webhook-id"] === id), "the delivery");
    expect(hit.headers["webhook-signature"]?.split(" "), "the current secret and both old ones").toHaveLength(3);
    for (const secret of [third.body.secret, second.body.secret, created.body.secret]) {
      expect(new Webhook(secret).verify(hit.body, hit.headers)).toMatchObject({ notification_id: id });
    }

    await f.sql`
      update webhook_endpoints
      set older_secrets = jsonb_set(older_secrets, '{0,until}', to_jsonb(now() - interval '1 second'))
      where endpoint_id = ${endpoint}`;
    const [next] = await store([{}], worker.waker);
    const after = await waitUntil(
      async () => granted.hits.find((h) => h.headers["webhook-id"] === next),
      "the delivery after one overlap",
    );
    expect(after.headers["webhook-signature"]?.split(" "), "an old secret past its overlap signs no more").toHaveLength(
      2,
    );
    expect(() => new Webhook(created.body.secret).verify(after.body, after.headers)).toThrow();
    expect(new Webhook(second.body.secret).verify(after.body, after.headers)).toMatchObject({ notification_id: next });
  });

  test("failed attempts are logged with status, duration, error and an excerpt, newest first, then retried", async () => {
    const { call, worker } = start();
    let calls = 0;
    granted.answer = () => (++calls === 1 ? new Response("x".repeat(5000), { status: 500 }) : new Response("fine"));
    const created = await call("POST", "/v1/webhook-endpoints", { url: granted.url });
    const [id] = await store([{}], worker.waker);
    const path = `/v1/webhook-endpoints/${created.body.endpoint_id}/attempts`;
    const page = await waitUntil(async () => {
      const answer = await call("GET", path);
      return answer.body.attempts.length === 2 ? answer.body : undefined;
    }, "two attempts");
    const [second, first] = page.attempts;
    expect(first).toMatchObject({
      notification_id: id,
      attempt: 1,
      status_code: 500,
      error: "the endpoint answered 500",
    });
    expect(first.response_excerpt).toHaveLength(1024);
    expect(first.duration_ms).toBeGreaterThanOrEqual(0);
    expect(second).toMatchObject({
      notification_id: id,
      attempt: 2,
      status_code: 200,
      error: null,
      response_excerpt: "fine",
    });
    const one = await call("GET", `${path}?limit=1`);
    const rest = await call("GET", `${path}?limit=1&cursor=${one.body.next_cursor}`);
    expect(rest.body.attempts[0].attempt_id).toBe(first.attempt_id);
    const [endpoint] =
      await f.sql`select failing_since from webhook_endpoints where endpoint_id = ${created.body.endpoint_id}`;
    expect(endpoint?.failing_since, "a success ends the run of failures").toBeNull();
  });

  test("a redirect is not followed: the attempt fails with its 3xx", async () => {
    const { call, worker } = start();
    granted.answer = () => new Response(null, { status: 302, headers: { location: matches.url } });
    const created = await call("POST", "/v1/webhook-endpoints", { url: granted.url });
    await store([{}], worker.waker);
    const attempt = await waitUntil(async () => {
      const answer = await call("GET", `/v1/webhook-endpoints/${created.body.endpoint_id}/attempts`);
      return answer.body.attempts[0];
    }, "the attempt");
    expect(attempt.status_code).toBe(302);
    expect(matches.hits).toHaveLength(0);
  });

  test("replay sends the window again with the original webhook-id; only_failed only the failed; twice queues once", async () => {
    const waker = new Waker();
    const { call } = start({ waker });
    granted.answer = () => new Response("gone", { status: 410 });
    const created = await call("POST", "/v1/webhook-endpoints", { url: granted.url });
    const since = new Date().toISOString();
    const [failed] = await store([{}], waker);
    await waitUntil(async () => {
      const [row] = await f.sql`select status from webhook_deliveries where notification_id = ${failed as string}`;
      return row?.status === "FAILED" || undefined;
    }, "a 410 ends the delivery FAILED at once");
    const [dlq] = await f.sql<{ n: number }[]>`
      select count(*)::int as n from notification_dlq where notification_id = ${failed as string}`;
    expect(dlq?.n, "an endpoint's FAILED delivery writes no DLQ row (the DLQ is the configured channel's)").toBe(0);
    granted.answer = () => new Response("ok");
    const [sent] = await store([{}], waker);
    await waitUntil(async () => hitsFor(granted, sent as string)[0], "the second notification");
    granted.hits = [];

    const path = `/v1/webhook-endpoints/${created.body.endpoint_id}/replay`;
    const onlyFailed = await call("POST", path, { since, only_failed: true });
    expect(onlyFailed.status).toBe(202);
    expect(onlyFailed.body.notifications).toBe(1);
    await waitUntil(async () => hitsFor(granted, failed as string)[0], "the failed one again");
    expect(hitsFor(granted, sent as string)).toHaveLength(0);

    await waitUntil(async () => {
      const rows = await f.sql`select 1 from webhook_deliveries where status in ('PENDING', 'PROCESSING')`;
      return rows.length === 0 || undefined;
    }, "nothing in flight");
    granted.hits = [];
    // Two replays of everything before the worker claims: each notification is queued once.
    const stopWorker = stops.pop() as () => Promise<void>;
    await stopWorker();
    const all = await call("POST", path, { since });
    const again = await call("POST", path, { since });
    expect(all.body.notifications).toBe(2);
    expect(again.body.notifications).toBe(2);
    start({ waker });
    await waitUntil(async () => (granted.hits.length >= 2 ? true : undefined), "the replay");
    await waitUntil(async () => {
      const rows = await f.sql`select 1 from webhook_deliveries where status in ('PENDING', 'PROCESSING')`;
      return rows.length === 0 || undefined;
    }, "the replay finished");
    expect(granted.hits.map((h) => h.headers["webhook-id"]).sort()).toEqual([failed, sent].sort() as string[]);
  });

  test("a replay asked for again at once queues nothing again, even what the first one already sent", async () => {
    const waker = new Waker();
    const { call } = start({ waker });
    const created = await call("POST", "/v1/webhook-endpoints", { url: granted.url });
    const id = created.body.endpoint_id as string;
    const since = new Date().toISOString();
    const ids = await store([{}, {}, {}], waker);
    await waitUntil(async () => (granted.hits.length >= 3 ? true : undefined), "the first deliveries");
    granted.hits = [];
    const path = `/v1/webhook-endpoints/${id}/replay`;
    const first = await call("POST", path, { since });
    expect(first.body.notifications).toBe(3);
    const settled = async () => {
      const rows = await f.sql<{ status: string; replay_id: string | null }[]>`
        select status, replay_id from webhook_deliveries where endpoint_id = ${id}`;
      return rows.every((r) => r.status === "SENT") ? rows : undefined;
    };
    await waitUntil(settled, "the replay sent");
    expect(granted.hits.map((h) => h.headers["webhook-id"]).sort()).toEqual([...ids].sort() as string[]);

    const again = await call("POST", path, { since });
    expect(again.status).toBe(202);
    expect(again.body.notifications, "the window still counts every notification").toBe(3);
    const rows = await f.sql<{ status: string; replay_id: string | null }[]>`
      select status, replay_id from webhook_deliveries where endpoint_id = ${id}`;
    expect(
      rows.map((r) => [r.status, r.replay_id]),
      "the second replay queued none of them again",
    ).toEqual(rows.map(() => ["SENT", first.body.replay_id]));
  });

  test("an endpoint failing for the whole disable window is disabled with a reason, a warning and the metric; enabling it sends what waited", async () => {
    const lines: string[] = [];
    const log = createLogger({ level: "info", service: "t", destination: { write: (l: string) => lines.push(l) } });
    const waker = new Waker();
    const { call, worker } = start({ waker, log, env: { NOTIFICATION_ENDPOINT_DISABLE_AFTER: "5d" } });
    granted.answer = () => new Response("down", { status: 503 });
    const created = await call("POST", "/v1/webhook-endpoints", { url: granted.url });
    const id = created.body.endpoint_id;
    await f.sql`update webhook_endpoints set failing_since = now() - interval '5 days 1 minute' where endpoint_id = ${id}`;
    const [waiting] = await store([{}], worker.waker);
    const disabled = await waitUntil(async () => {
      const answer = await call("GET", `/v1/webhook-endpoints/${id}`);
      return answer.body.enabled === false ? answer.body : undefined;
    }, "the endpoint disabled");
    expect(disabled.disabled_reason).toContain("every attempt failed");
    const warning = lines.map((l) => JSON.parse(l)).find((l) => l.msg.startsWith("webhook endpoint disabled"));
    expect(warning).toMatchObject({ level: "warn", endpoint_id: id });
    expect(await worker.registry.metrics()).toMatch(/notification_webhook_endpoints_disabled_total\{[^}]*\} 1\n/);

    await waitUntil(async () => {
      const [row] = await f.sql`select status from webhook_deliveries where notification_id = ${waiting as string}`;
      return row?.status === "FAILED" || row?.status === "PENDING" ? true : undefined;
    }, "the delivery waits");
    granted.answer = () => new Response("back");
    granted.hits = [];
    const enabled = await call("PATCH", `/v1/webhook-endpoints/${id}`, { enabled: true });
    expect(enabled.body).toMatchObject({ enabled: true, disabled_reason: null, failing_since: null });
    await waitUntil(async () => hitsFor(granted, waiting as string)[0], "what waited is sent");
  });

  test("a secret no configured key opens fails the attempt on the service's side: logged, but not the endpoint's failure", async () => {
    const { call, worker } = start();
    const created = await call("POST", "/v1/webhook-endpoints", { url: granted.url });
    const id = created.body.endpoint_id as string;
    await f.sql`update webhook_endpoints set secret_ciphertext = 'v1.0badc0de.aaaa.bbbb.cccc' where endpoint_id = ${id}`;
    await store([{}], worker.waker);
    const attempt = await waitUntil(async () => {
      const page = await call("GET", `/v1/webhook-endpoints/${id}/attempts`);
      return page.body.attempts[0];
    }, "the attempt");
    expect(attempt.error).toContain("sealed with another key");
    expect(granted.hits, "nothing unsigned is sent").toHaveLength(0);
    const endpoint = await call("GET", `/v1/webhook-endpoints/${id}`);
    expect(endpoint.body.failing_since, "the endpoint is not blamed for the service's key").toBeNull();
  });

  test("deleting an endpoint stops its deliveries", async () => {
    const { call, worker } = start();
    const created = await call("POST", "/v1/webhook-endpoints", { url: granted.url });
    await worker.stop();
    stops.pop();
    await store([{}], worker.waker);
    expect((await call("DELETE", `/v1/webhook-endpoints/${created.body.endpoint_id}`)).status).toBe(204);
    const [row] = await f.sql<{ n: number }[]>`select count(*)::int as n from webhook_deliveries`;
    expect(row?.n).toBe(0);
  });
});
