// A password must never be printed, whatever characters it holds: not in a configuration problem (either service,
// any command), not in a log line, not in an operator command's error. Property-based over generated passwords and
// the URL shapes the services take (one host, several, IPv6, a query, a password parameter, NATS lists, no scheme).
import { describe, expect, spyOn, test } from "bun:test";
import { Writable } from "node:stream";
import fc from "fast-check";
import { loadEntitlementConfig } from "../../src/entitlement/config.ts";
import { entitlementOpsSubcommands } from "../../src/entitlement/ops/subcommands.ts";
import { loadNotificationConfig } from "../../src/notification/config.ts";
import { notificationOpsSubcommands } from "../../src/notification/ops/subcommands.ts";
import { ConfigError, redact } from "../../src/shared/config.ts";
import { hideCredentials } from "../../src/shared/credentials.ts";
import { createLogger } from "../../src/shared/logger.ts";

/** Letters no URL shape or message contains; a password holds it at its start, middle and end. */
const MARK = "Qz7Xw";
const SPECIAL = ["/", "#", "@", "%", ":", "?", "&", ",", "=", "[", "]", " ", '"', "\\", "'", "+", ";", "//", "%40"];
const piece = fc.array(fc.oneof(fc.constantFrom(...SPECIAL), fc.string({ maxLength: 3 })), { maxLength: 4 });
const password = fc.tuple(piece, piece).map(([a, b]) => `${MARK}${a.join("")}${MARK}${b.join("")}${MARK}`);
const user = fc.stringMatching(/^[a-z][a-z0-9_]{0,8}$/);

type Shape = (user: string, password: string) => string;
const SHAPES: Record<string, Shape> = {
  database: (u, p) => `postgres://${u}:${p}@db.internal:5432/app`,
  databaseQuery: (u, p) => `postgresql://${u}:${p}@db.internal:5432/app?sslmode=verify-full&application_name=x`,
  databaseHosts: (u, p) => `postgres://${u}:${p}@h1:5432,h2:5433/app?target_session_attrs=read-write`,
  databaseIpv6: (u, p) => `postgres://${u}:${p}@[::1]:5432/app`,
  passwordParameter: (u, p) => `postgres://db.internal/app?user=${u}&password=${p}&sslmode=require`,
  nats: (u, p) => `nats://${u}:${p}@127.0.0.1:4222`,
  natsList: (u, p) => `nats://${u}:${p}@n1:4222, tls://${u}:${p}@n2:4222`,
  natsToken: (_, p) => `tls://${p}@n1:4222`,
  noScheme: (u, p) => `${u}:${p}@127.0.0.1:4222`,
};
const shaped = fc.tuple(fc.constantFrom(...Object.values(SHAPES)), user, password).map(([shape, u, p]) => ({
  url: shape(u, p),
  password: p,
}));

const leaks = (text: string, secret: string) => text.includes(secret) || text.includes(MARK);

describe("hideCredentials", () => {
  test("no part of a password survives, whatever it holds and wherever it sits", () => {
    fc.assert(
      fc.property(shaped, ({ url, password }) => {
        for (const shown of [hideCredentials(url), redact("DATABASE_URL", url), redact("NATS_URL", url)]) {
          if (leaks(shown, password)) throw new Error(`${JSON.stringify(url)} was shown as ${JSON.stringify(shown)}`);
        }
      }),
      { numRuns: 500 },
    );
  });

  test("a value without credentials is kept, so a problem still says which host was meant", () => {
    expect(hideCredentials("postgres://db.internal:5432/app?sslmode=require")).toBe(
      "postgres://db.internal:5432/app?sslmode=require",
    );
    expect(hideCredentials("nats://a:p/w@n1:4222")).toBe("nats://***@n1:4222");
  });
});

/** The problems a configuration load reports, or none. */
function problemsOf(load: () => unknown): string {
  try {
    load();
    return "";
  } catch (error) {
    if (error instanceof ConfigError) return error.problems.join("\n");
    throw error;
  }
}

/** An environment whose every URL variable carries the password, one of them made invalid so that it is reported. */
function hostileEnv(url: string, broken: string): Record<string, string> {
  const env: Record<string, string> = {
    ENTITLEMENT_AUTH_DISABLED: "true",
    DATABASE_URL: url,
    DATABASE_MIGRATION_URL: url,
    NATS_URL: url,
    NOTIFICATION_DELIVERY_CHANNEL: "webhook",
    NOTIFICATION_WEBHOOK_URL: `https://${url.replace(/^[a-z]+:\/\//, "")}`,
    OTEL_EXPORTER_OTLP_ENDPOINT: `https://${url.replace(/^[a-z]+:\/\//, "")}`,
  };
  env[broken] = `${url}${url.includes("?") ? "&" : "?"}sslmode=sometimes`;
  return env;
}

/** A valid invocation of each operator command that reads the database. */
const ARGS: Record<string, string[]> = { outbox: ["stats"], points: ["stats"], dlq: ["list"], "nats-dlq": ["list"] };

const BROKEN = ["DATABASE_URL", "DATABASE_MIGRATION_URL", "NATS_URL"] as const;

describe("configuration problems", () => {
  test("neither service prints a password in a configuration problem", () => {
    fc.assert(
      fc.property(shaped, fc.constantFrom(...BROKEN), ({ url, password }, broken) => {
        const env = hostileEnv(url, broken);
        const problems = [problemsOf(() => loadEntitlementConfig(env)), problemsOf(() => loadNotificationConfig(env))];
        expect(problems.join("").length, "the broken variable is reported").toBeGreaterThan(0);
        for (const text of problems) if (leaks(text, password)) throw new Error(`printed: ${text}`);
      }),
      { numRuns: 150 },
    );
  });

  test("no operator command prints a password when the configuration is invalid", async () => {
    await fc.assert(
      fc.asyncProperty(shaped, fc.constantFrom(...BROKEN), async ({ url, password }, broken) => {
        const env = hostileEnv(url, broken);
        const printed: string[] = [];
        const capture = (...args: unknown[]) => void printed.push(args.join(" "));
        const error = spyOn(console, "error").mockImplementation(capture);
        const log = spyOn(console, "log").mockImplementation(capture);
        try {
          const commands = [...entitlementOpsSubcommands(env), ...notificationOpsSubcommands(env)];
          for (const command of commands) {
            const args = ARGS[command.name];
            if (args) expect(await command.run(args), `${command.name} exits 78`).toBe(78);
          }
        } finally {
          error.mockRestore();
          log.mockRestore();
        }
        const text = printed.join("\n");
        if (leaks(text, password)) throw new Error(`printed: ${text}`);
      }),
      { numRuns: 40 },
    );
  });
});

describe("logs", () => {
  test("a URL logged under a URL key, or as a refused URL's `input`, loses its password", () => {
    fc.assert(
      fc.property(shaped, ({ url, password }) => {
        let line = "";
        const destination = new Writable({
          write(chunk, _encoding, done) {
            line += String(chunk);
            done();
          },
        });
        const log = createLogger({ level: "info", service: "test", destination });
        const refused = Object.assign(new TypeError("Invalid URL"), { input: url });
        log.error({ url, NATS_URL: url, err: refused, nested: { databaseUrl: url } }, "NATS connection failed");
        log.flush();
        if (leaks(line, password)) throw new Error(`logged: ${line}`);
      }),
      { numRuns: 200 },
    );
  });
});
