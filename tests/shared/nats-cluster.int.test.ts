// NATS past one machine (docs/configuration.md): on a private 3-node cluster (tests/support/nats-cluster.ts), every stream the
// services create takes the configured replica count, their durables follow their stream, and a connection given the
// server list moves to another node when its own dies.
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { type JetStreamManager, jetstream, jetstreamManager } from "@nats-io/jetstream";
import { ensureEntitlementStream } from "../../src/entitlement/work/outbox/stream.ts";
import { ensureDurable, ensureOwnedStream, ensureStreamExists } from "../../src/notification/intake/nats/streams.ts";
import { silentLogger } from "../../src/shared/logger.ts";
import { type NatsConnection, type NatsLink, openNatsLink } from "../../src/shared/nats.ts";
import { type NatsCluster, startNatsCluster } from "../support/nats-cluster.ts";
import { waitUntil } from "../support/wait.ts";

setDefaultTimeout(60_000);

let cluster: NatsCluster;
let link: NatsLink;
let nc: NatsConnection;
let jsm: JetStreamManager;

beforeAll(async () => {
  cluster = await startNatsCluster();
  link = openNatsLink({ url: cluster.url, connectionTimeoutMs: 2_000, name: "cluster-test" }, silentLogger);
  const connection = await link.get(AbortSignal.timeout(30_000));
  if (!connection) throw new Error("no connection to the NATS cluster within 30s");
  nc = connection;
  jsm = await jetstreamManager(nc);
}, 60_000);

afterAll(async () => {
  await link?.close();
  cluster?.dispose();
});

/** Peers besides the leader, as the stream or consumer info lists them. */
const followers = (info: { cluster?: { replicas?: unknown[] } }) => info.cluster?.replicas?.length ?? 0;

test("Entitlement creates its stream at the configured replica count and scales an existing one to it", async () => {
  const settings = { stream: "ent-r3", subject: "ent-r3.events", duplicateWindowMs: 120_000, replicas: 3 };
  expect(await ensureEntitlementStream(jsm, settings)).toBe("created");
  const created = await jsm.streams.info("ent-r3");
  expect(created.config.num_replicas).toBe(3);
  expect(followers(created), "two followers beside the leader").toBe(2);

  await ensureEntitlementStream(jsm, { ...settings, stream: "ent-r1", subject: "ent-r1.events", replicas: 1 });
  expect(await ensureEntitlementStream(jsm, { ...settings, stream: "ent-r1", subject: "ent-r1.events" })).toBe(
    "updated",
  );
  expect((await jsm.streams.info("ent-r1")).config.num_replicas, "an R1 stream is scaled to the setting").toBe(3);
});

test("Notification creates its streams at the configured replica count and its durables follow their stream", async () => {
  await ensureStreamExists(jsm, { name: "ev-missing", subjects: ["ev-missing.events"], replicas: 3 });
  expect((await jsm.streams.info("ev-missing")).config.num_replicas).toBe(3);

  await ensureOwnedStream(jsm, { name: "adv", subjects: ["adv.subject"], replicas: 1 });
  const spec = { stream: "adv", durable: "adv-durable", ackWaitMs: 10_000, maxDeliver: 10 };
  await ensureDurable(jsm, spec);
  expect(followers(await jsm.consumers.info("adv", "adv-durable")), "an R1 durable has no followers").toBe(0);

  await ensureOwnedStream(jsm, { name: "adv", subjects: ["adv.subject"], replicas: 3 });
  expect((await jsm.streams.info("adv")).config.num_replicas, "an owned stream is scaled to the setting").toBe(3);
  // The stream scales its durables with it (num_replicas unset); their info may time out while they move.
  await waitUntil(
    async () => followers(await jsm.consumers.info("adv", "adv-durable").catch(() => ({}))) === 2,
    "the durable to follow its stream to three replicas",
    30_000,
    250,
  );
});

test("a connection given the server list moves to another node when its node is killed, and publishes go on", async () => {
  const stream = "moving";
  await ensureEntitlementStream(jsm, { stream, subject: "moving.events", duplicateWindowMs: 120_000, replicas: 3 });
  const js = jetstream(nc);
  await js.publish("moving.events", "before", { msgID: "before" });
  const reconnected = new Promise<void>((resolve) => link.onReconnect(resolve));
  const own = cluster.nodes.find((n) => nc.getServer().endsWith(`:${new URL(n.url).port}`));
  expect(own, "the connection names the node it is on").toBeDefined();
  await own?.stop("SIGKILL");
  await reconnected;
  expect(link.connected(), "the link reports the connection usable again").toBe(true);
  expect(nc.getServer(), "now on another node").not.toContain(`:${new URL(own?.url ?? "nats://x:1").port}`);
  const ack = await waitUntil(
    () => js.publish("moving.events", "after", { msgID: "after" }).catch(() => undefined),
    "a publish acknowledged by the two nodes left",
    30_000,
    250,
  );
  expect(ack.duplicate).toBe(false);
  const info = await jsm.streams.info(stream);
  expect(info.state.messages, "the message acknowledged before the kill is still there").toBe(2);
  await own?.start();
});
