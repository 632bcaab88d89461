import { describe, expect, test } from "bun:test";
import { loadEntitlementConfig } from "../../src/entitlement/config.ts";
import { loadNotificationConfig } from "../../src/notification/config.ts";
import { parseDuration } from "../../src/shared/config.ts";
import { configProblems } from "../support/captures.ts";

describe("durations", () => {
  test("units and bare milliseconds", () => {
    expect(parseDuration("250ms")).toBe(250);
    expect(parseDuration("1s")).toBe(1000);
    expect(parseDuration("2m")).toBe(120_000);
    expect(parseDuration("24h")).toBe(86_400_000);
    expect(parseDuration("7d")).toBe(604_800_000);
    expect(parseDuration("1500")).toBe(1500);
    expect(parseDuration("1.5s")).toBe(1500);
  });
  test("malformed values are rejected", () => {
    for (const bad of ["", "1w", "-1s", "s", "1 s s", "PT1S", "1e3"]) expect(parseDuration(bad)).toBeUndefined();
  });
});

describe("entitlement configuration", () => {
  // Serving needs tokens or an explicit opt-out (docs/security.md; tests/entitlement/auth.unit.test.ts covers the rule).
  const noAuth = { ENTITLEMENT_AUTH_DISABLED: "true" };

  test("defaults match the Java original's", () => {
    const c = loadEntitlementConfig(noAuth);
    expect(c.http.port).toBe(8080);
    expect(c.outbox).toMatchObject({
      pollIntervalMs: 1000,
      batchSize: 50,
      concurrency: 4,
      maxAttempts: 10,
      leaseMs: 30_000,
      errorMessageMaxLength: 1000,
      backoff: { baseMs: 1000, maxMs: 60_000, minMs: 1000, exponentBase: 2, jitterMin: 0.5, jitterMax: 1.5 },
    });
    expect(c.retention).toEqual({ enabled: true, cleanupIntervalMs: 3_600_000, publishedTtlMs: 86_400_000 });
    expect(c.nats).toMatchObject({
      subject: "entitlement.events",
      stream: "entitlement-events",
      duplicateWindowMs: 120_000,
    });
    expect(c.idempotency.ttlHours).toBe(24);
    expect(c.database.url).toBe("postgres://postgres@127.0.0.1:5432/postgres");
  });

  test("ENTITLEMENT_NATS_STREAM_REPLICAS: 1 by default, 3 for a 3-node cluster, outside 1-5 refused", () => {
    expect(loadEntitlementConfig(noAuth).nats.replicas).toBe(1);
    expect(loadEntitlementConfig({ ...noAuth, ENTITLEMENT_NATS_STREAM_REPLICAS: "3" }).nats.replicas).toBe(3);
    for (const bad of ["0", "6", "two"]) {
      const problems = configProblems(() =>
        loadEntitlementConfig({ ...noAuth, ENTITLEMENT_NATS_STREAM_REPLICAS: bad }),
      );
      expect(problems.join("\n")).toContain("ENTITLEMENT_NATS_STREAM_REPLICAS");
    }
  });

  test("ENTITLEMENT_OUTBOX_CONCURRENCY sets the relay's batches in flight; 0 is refused", () => {
    expect(loadEntitlementConfig({ ...noAuth, ENTITLEMENT_OUTBOX_CONCURRENCY: "1" }).outbox.concurrency).toBe(1);
    const problems = configProblems(() => loadEntitlementConfig({ ...noAuth, ENTITLEMENT_OUTBOX_CONCURRENCY: "0" }));
    expect(problems.join("\n")).toContain("ENTITLEMENT_OUTBOX_CONCURRENCY");
  });

  test("every bad variable is reported at once, naming the variable and the value", () => {
    const problems = configProblems(() =>
      loadEntitlementConfig({
        ENTITLEMENT_OUTBOX_POLL_INTERVAL: "5 fortnights",
        ENTITLEMENT_OUTBOX_BATCH_SIZE: "-3",
        ENTITLEMENT_NATS_SUBJECT: "   ",
        PORT: "http",
      }),
    );
    // The four bad values, plus the missing tokens (no ENTITLEMENT_AUTH_TOKENS and auth not disabled).
    expect(problems).toHaveLength(5);
    expect(problems.join("\n")).toContain("ENTITLEMENT_AUTH_TOKENS");
    expect(problems.join("\n")).toContain(
      'ENTITLEMENT_OUTBOX_POLL_INTERVAL="5 fortnights" is invalid: expected a duration',
    );
    expect(problems.join("\n")).toContain('ENTITLEMENT_OUTBOX_BATCH_SIZE="-3" is invalid: expected an integer >= 1');
    expect(problems.join("\n")).toContain("ENTITLEMENT_NATS_SUBJECT");
    expect(problems.join("\n")).toContain("PORT");
  });

  test("SERVER_PORT (the Java original's server.port) is used when PORT is unset; PORT wins", () => {
    const base = { ENTITLEMENT_AUTH_DISABLED: "true" };
    expect(loadEntitlementConfig({ ...base, SERVER_PORT: "9090" }).http.port).toBe(9090);
    expect(loadEntitlementConfig({ ...base, SERVER_PORT: "9090", PORT: "7070" }).http.port).toBe(7070);
    expect(loadNotificationConfig({ SERVER_PORT: "9091" }).http.port).toBe(9091);
    expect(configProblems(() => loadNotificationConfig({ SERVER_PORT: "http" }))[0]).toContain("SERVER_PORT");
  });

  test("min greater than max is refused", () => {
    const problems = configProblems(() =>
      loadEntitlementConfig({ ...noAuth, ENTITLEMENT_OUTBOX_BACKOFF_MIN: "2m", ENTITLEMENT_OUTBOX_BACKOFF_MAX: "1m" }),
    );
    expect(problems).toEqual([
      "ENTITLEMENT_OUTBOX_BACKOFF_MIN=120000 must not be greater than ENTITLEMENT_OUTBOX_BACKOFF_MAX=60000",
    ]);
  });

  test("cross-variable problems are reported together with single-variable ones", () => {
    const problems = configProblems(() =>
      loadEntitlementConfig({
        ENTITLEMENT_AUTH_DISABLED: "true",
        ENTITLEMENT_OUTBOX_BACKOFF_MIN: "2m",
        ENTITLEMENT_OUTBOX_BACKOFF_MAX: "1m",
        ENTITLEMENT_OUTBOX_BATCH_SIZE: "many",
      }),
    );
    expect(problems).toHaveLength(2);
    expect(problems.join("\n")).toContain("ENTITLEMENT_OUTBOX_BATCH_SIZE");
    expect(problems.join("\n")).toContain("must not be greater than ENTITLEMENT_OUTBOX_BACKOFF_MAX");
  });

  test("a rule over an invalid variable is skipped rather than judging an unparsed value", () => {
    const problems = configProblems(() =>
      loadEntitlementConfig({
        ENTITLEMENT_AUTH_DISABLED: "true",
        ENTITLEMENT_OUTBOX_BACKOFF_MIN: "soon",
        ENTITLEMENT_OUTBOX_BACKOFF_MAX: "1m",
      }),
    );
    expect(problems).toEqual([expect.stringContaining('ENTITLEMENT_OUTBOX_BACKOFF_MIN="soon" is invalid')]);
  });

  test("a database password never appears in a problem", () => {
    const problems = configProblems(() =>
      loadEntitlementConfig({ DATABASE_URL: "postgres://app:hunter2@db/x", DATABASE_POOL_MAX: "0" }),
    );
    expect(problems.join("\n")).not.toContain("hunter2");
  });
});

describe("notification configuration", () => {
  test("defaults match the Java original's", () => {
    const c = loadNotificationConfig({});
    expect(c.http.port).toBe(8081);
    expect(c.nats).toMatchObject({
      subject: "entitlement.events",
      stream: "entitlement-events",
      durable: "notification-entitlement-consumer",
      // Shorter than the original system's 10 s: a killed process's messages come back within seconds (in-hand.ts).
      ackWaitMs: 3_000,
      maxDeliver: 10,
    });
    expect(c.nats.advisories.map((a) => a.subject)).toEqual([
      "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.entitlement-events.notification-entitlement-consumer",
      "$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED.entitlement-events.notification-entitlement-consumer",
    ]);
    expect(c.retention).toEqual({ enabled: true, retentionDays: 30, cleanupIntervalMs: 3_600_000 });
    expect(c.delivery.channel).toBe("log");
    expect(c.debugApi.enabled).toBe(false);
  });

  test("NOTIFICATION_NATS_STREAM_REPLICAS applies to every stream Notification creates; outside 1-5 refused", () => {
    const defaults = loadNotificationConfig({}).nats;
    expect([defaults.replicas, ...defaults.advisories.map((a) => a.replicas)]).toEqual([1, 1, 1]);
    const three = loadNotificationConfig({ NOTIFICATION_NATS_STREAM_REPLICAS: "3" }).nats;
    expect([three.replicas, ...three.advisories.map((a) => a.replicas)]).toEqual([3, 3, 3]);
    const problems = configProblems(() => loadNotificationConfig({ NOTIFICATION_NATS_STREAM_REPLICAS: "0" }));
    expect(problems.join("\n")).toContain("NOTIFICATION_NATS_STREAM_REPLICAS");
  });

  test("matchmaking consumer: the Java original's notification.matchmaking-nats.* defaults", () => {
    expect(loadNotificationConfig({}).nats.matchmaking).toEqual({
      subject: "matchmaking.events",
      stream: "matchmaking-events",
      durable: "notification-matchmaking-consumer",
      duplicateWindowMs: 120_000,
      replicas: 1,
      ackWaitMs: 3_000,
      maxDeliver: 10,
      advisorySubjects: {
        MAX_DELIVERIES:
          "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.matchmaking-events.notification-matchmaking-consumer",
        MSG_TERMINATED:
          "$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED.matchmaking-events.notification-matchmaking-consumer",
      },
    });
    expect(loadNotificationConfig({ NOTIFICATION_NATS_STREAM_REPLICAS: "3" }).nats.matchmaking?.replicas).toBe(3);
    expect(loadNotificationConfig({ NOTIFICATION_MATCHMAKING_NATS_ENABLED: "false" }).nats.matchmaking).toBeUndefined();
  });

  test("matchmaking consumer: ack wait 0, max deliver 0, a blank subject or the entitlement stream are refused (51, 52)", () => {
    const problems = configProblems(() =>
      loadNotificationConfig({
        NOTIFICATION_MATCHMAKING_NATS_ACK_WAIT: "0",
        NOTIFICATION_MATCHMAKING_NATS_MAX_DELIVER: "0",
        NOTIFICATION_MATCHMAKING_NATS_SUBJECT: " ",
      }),
    );
    for (const name of ["ACK_WAIT", "MAX_DELIVER", "SUBJECT"])
      expect(problems.join("\n")).toContain(`NOTIFICATION_MATCHMAKING_NATS_${name}`);
    expect(
      configProblems(() => loadNotificationConfig({ NOTIFICATION_MATCHMAKING_NATS_STREAM: "entitlement-events" })),
    ).toEqual([expect.stringContaining("must differ from NOTIFICATION_NATS_STREAM")]);
    expect(
      configProblems(() => loadNotificationConfig({ NOTIFICATION_POINTS_NATS_STREAM: "matchmaking-events" })),
    ).toEqual([expect.stringContaining("must differ from NOTIFICATION_MATCHMAKING_NATS_STREAM")]);
    const points = loadNotificationConfig({}).nats.points;
    expect(points).toMatchObject({
      stream: "points-events",
      subject: "points.events",
      durable: "notification-points-consumer",
    });
    expect(loadNotificationConfig({ NOTIFICATION_POINTS_NATS_ENABLED: "false" }).nats.points).toBeUndefined();
  });

  test("the advisory subjects follow the configured stream and durable, unless set explicitly", () => {
    const c = loadNotificationConfig({ NOTIFICATION_NATS_STREAM: "ev-2", NOTIFICATION_NATS_DURABLE: "notif-2" });
    expect(
      c.nats.advisories.map((a) => a.subject),
      "with other names, poison messages must still be captured",
    ).toEqual([
      "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.ev-2.notif-2",
      "$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED.ev-2.notif-2",
    ]);
    const explicit = loadNotificationConfig({
      NOTIFICATION_NATS_STREAM: "ev-2",
      NOTIFICATION_NATS_ADVISORY_SUBJECT: "custom.max",
      NOTIFICATION_NATS_TERMINATED_ADVISORY_SUBJECT: "custom.term",
    });
    expect(explicit.nats.advisories.map((a) => a.subject)).toEqual(["custom.max", "custom.term"]);
    expect(configProblems(() => loadNotificationConfig({ NOTIFICATION_NATS_ADVISORY_SUBJECT: " " }))[0]).toContain(
      "NOTIFICATION_NATS_ADVISORY_SUBJECT",
    );
  });

  test("delivery backoff: the Java original's defaults, and min greater than max is refused", () => {
    expect(loadNotificationConfig({}).delivery.backoff).toEqual({
      baseMs: 1000,
      maxMs: 60_000,
      minMs: 1000,
      exponentBase: 2,
      jitterMin: 0.5,
      jitterMax: 1.5,
    });
    expect(
      configProblems(() =>
        loadNotificationConfig({
          NOTIFICATION_DELIVERY_BACKOFF_JITTER_MIN: "2",
          NOTIFICATION_DELIVERY_BACKOFF_JITTER_MAX: "1",
        }),
      ),
    ).toEqual([
      "NOTIFICATION_DELIVERY_BACKOFF_JITTER_MIN=2 must not be greater than NOTIFICATION_DELIVERY_BACKOFF_JITTER_MAX=1",
    ]);
  });

  test("ack wait and max deliver must be positive", () => {
    const problems = configProblems(() =>
      loadNotificationConfig({ NOTIFICATION_NATS_ACK_WAIT: "0", NOTIFICATION_NATS_MAX_DELIVER: "0" }),
    );
    expect(problems).toHaveLength(2);
  });

  test("the webhook channel needs a URL and a whsec_ secret, and the secret is never echoed", () => {
    const problems = configProblems(() =>
      loadNotificationConfig({ NOTIFICATION_DELIVERY_CHANNEL: "webhook", NOTIFICATION_WEBHOOK_URL: "ftp://x" }),
    );
    expect(problems[0]).toContain("NOTIFICATION_WEBHOOK_URL");
    const secret = configProblems(() =>
      loadNotificationConfig({
        NOTIFICATION_DELIVERY_CHANNEL: "webhook",
        NOTIFICATION_WEBHOOK_URL: "http://localhost:9/hook",
        NOTIFICATION_WEBHOOK_SECRET: "plain-secret-value",
      }),
    );
    expect(secret[0]).toContain("NOTIFICATION_WEBHOOK_SECRET");
    expect(secret.join("\n")).not.toContain("plain-secret-value");
  });

  test("the console is off by default and never served without the debug token", () => {
    expect(loadNotificationConfig({}).console).toEqual({ enabled: false, idleMs: 900_000, alwaysSecure: false });
    const problems = configProblems(() => loadNotificationConfig({ NOTIFICATION_CONSOLE_ENABLED: "true" }));
    expect(problems).toEqual([
      "NOTIFICATION_DEBUG_API_TOKEN must be set (at least 16 characters) when NOTIFICATION_CONSOLE_ENABLED=true",
    ]);
    const on = loadNotificationConfig({
      NOTIFICATION_CONSOLE_ENABLED: "true",
      NOTIFICATION_DEBUG_API_TOKEN: "0123456789abcdef",
      NOTIFICATION_CONSOLE_IDLE_TIMEOUT: "5m",
      NOTIFICATION_CONSOLE_SECURE_COOKIE: "true",
    });
    expect(on.console).toEqual({ enabled: true, idleMs: 300_000, alwaysSecure: true });
    expect(on.debugApi.enabled, "the console needs the token, not the debug inbox").toBe(false);
  });
});

describe("entitlement console configuration", () => {
  test("off by default; on, it refuses ENTITLEMENT_AUTH_DISABLED (people sign in with API tokens)", () => {
    expect(loadEntitlementConfig({ ENTITLEMENT_AUTH_DISABLED: "true" }).console.enabled).toBe(false);
    const problems = configProblems(() =>
      loadEntitlementConfig({ ENTITLEMENT_AUTH_DISABLED: "true", ENTITLEMENT_CONSOLE_ENABLED: "true" }),
    );
    expect(problems.join("\n")).toContain("ENTITLEMENT_CONSOLE_ENABLED=true needs ENTITLEMENT_AUTH_TOKENS");
  });
});

describe("DATABASE_MIGRATION_URL", () => {
  const noAuth = { ENTITLEMENT_AUTH_DISABLED: "true" };
  test("defaults to DATABASE_URL, and is taken as given when set", () => {
    const runtime = "postgres://entitlement_app@db/app";
    const owner = "postgres://entitlement_owner:pw@db/app";
    for (const load of [
      (e: Record<string, string>) => loadEntitlementConfig({ ...noAuth, ...e }).database,
      (e: Record<string, string>) => loadNotificationConfig(e).database,
    ]) {
      expect(load({ DATABASE_URL: runtime }).migrationUrl).toBe(runtime);
      expect(load({ DATABASE_URL: runtime, DATABASE_MIGRATION_URL: owner })).toMatchObject({
        url: runtime,
        migrationUrl: owner,
      });
    }
  });
});
