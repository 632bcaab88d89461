// A DATABASE_URL that postgres.js cannot read used to crash the process with its TypeError, which quotes the whole
// input: the password reached the terminal and the log collector. Now it is a configuration problem like any other.
import { expect, setDefaultTimeout, test } from "bun:test";
import { join, resolve } from "node:path";
import { loadEntitlementConfig } from "../../src/entitlement/config.ts";
import { loadNotificationConfig } from "../../src/notification/config.ts";
import { ConfigError, EXIT_CONFIG } from "../../src/shared/config.ts";
import { runCommand } from "../support/process.ts";

setDefaultTimeout(60_000);

const root = resolve(import.meta.dir, "../..");
const PASSWORD = "s3cret-Pa55word";
const BAD_URLS = [
  `postgres://app:${PASSWORD}@db.internal:99999/entitlements`,
  `postgres://app:${PASSWORD}@db internal/entitlements`,
  `postgres://app:${PASSWORD}@[::1/entitlements`,
];

function problems(load: () => unknown): string[] {
  try {
    load();
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  return [];
}

test.each(BAD_URLS)("a malformed DATABASE_URL is a configuration problem that hides the credentials (%#)", (url) => {
  for (const load of [
    () => loadEntitlementConfig({ DATABASE_URL: url, ENTITLEMENT_AUTH_DISABLED: "true" }),
    () => loadNotificationConfig({ DATABASE_URL: url }),
  ]) {
    const found = problems(load);
    expect(found.join("\n")).toContain("DATABASE_URL=");
    expect(found.join("\n"), "no part of the password").not.toContain("s3cret");
  }
});

test.each(BAD_URLS)(
  "a malformed DATABASE_MIGRATION_URL is a configuration problem that hides the credentials (%#)",
  (url) => {
    const good = { DATABASE_URL: "postgres://app@db/app", DATABASE_MIGRATION_URL: url };
    for (const load of [
      () => loadEntitlementConfig({ ...good, ENTITLEMENT_AUTH_DISABLED: "true" }),
      () => loadNotificationConfig(good),
    ]) {
      const found = problems(load);
      expect(found.join("\n")).toContain("DATABASE_MIGRATION_URL=");
      expect(found.join("\n"), "no part of the password").not.toContain("s3cret");
    }
  },
);

test("a multi-host URL stays valid", () => {
  const url = "postgres://app:pw@h1:5432,h2:5433/db?target_session_attrs=read-write";
  expect(loadEntitlementConfig({ DATABASE_URL: url, ENTITLEMENT_AUTH_DISABLED: "true" }).database.url).toBe(url);
});

const SERVICES = ["entitlement", "notification"].flatMap((service) =>
  ["DATABASE_URL", "DATABASE_MIGRATION_URL"].map((variable) => [service, variable]),
);

test.each(SERVICES)("%s exits 78 on a malformed %s without printing the password", async (service, variable) => {
  const env = { ...process.env, ENTITLEMENT_AUTH_DISABLED: "true", LOG_LEVEL: "info", [variable]: BAD_URLS[0] };
  const r = await runCommand([process.execPath, join(root, `src/${service}/main.ts`), "migrate"], {
    env,
    timeoutMs: 30_000,
  });
  expect(r.code, r.stderr).toBe(EXIT_CONFIG);
  expect(r.stderr).toContain(`${variable}=`);
  expect(`${r.stdout}${r.stderr}`, "the password never reaches the terminal").not.toContain("s3cret");
});

const BAD_TLS = [
  ["DATABASE_URL", `postgres://app:${PASSWORD}@db/app?sslmode=verify_full`, 'sslmode="verify_full" is not one of'],
  [
    "DATABASE_MIGRATION_URL",
    `postgres://owner:${PASSWORD}@db/app?sslmode=verify-full&sslrootcert=/nonexistent/ca.pem`,
    "sslrootcert=/nonexistent/ca.pem cannot be read (ENOENT)",
  ],
  ["DATABASE_URL", `postgres://app@db/app?password=${PASSWORD}&sslmode=verify-full`, "needs sslrootcert"],
] as const;

test.each(BAD_TLS)("TLS parameters %s cannot honour are a configuration problem (%#)", (variable, url, expected) => {
  for (const load of [
    () => loadEntitlementConfig({ [variable]: url, ENTITLEMENT_AUTH_DISABLED: "true" }),
    () => loadNotificationConfig({ [variable]: url }),
  ]) {
    const found = problems(load).join("\n");
    expect(found).toContain(`${variable}=`);
    expect(found).toContain(expected);
    expect(found, "no part of the password, in the authority or as a parameter").not.toContain("s3cret");
  }
});

test.each(["entitlement", "notification"])("%s migrate exits 78 on an unreadable sslrootcert", async (service) => {
  const url = BAD_TLS[1][1];
  const r = await runCommand([process.execPath, join(root, `src/${service}/main.ts`), "migrate"], {
    env: { ...process.env, ENTITLEMENT_AUTH_DISABLED: "true", DATABASE_MIGRATION_URL: url },
    timeoutMs: 30_000,
  });
  expect(r.code, r.stderr).toBe(EXIT_CONFIG);
  expect(r.stderr).toContain("DATABASE_MIGRATION_URL=");
  expect(r.stderr).toContain("sslrootcert=/nonexistent/ca.pem cannot be read");
  expect(`${r.stdout}${r.stderr}`, "the password never reaches the terminal").not.toContain("s3cret");
});
