// deploy/systemd/*.env.example: what an operator copies to /etc/<service>/<service>.env. Every line is a variable of
// that service's configuration schema, the whole file is a valid configuration (Entitlement's only until its tokens
// are filled in: serve fails closed), and it migrates as the schema's owner and serves as its runtime role, with the
// role names of docs/security.md.
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { EntitlementEnv, loadEntitlementConfig } from "../../src/entitlement/config.ts";
import { loadNotificationConfig, NotificationEnv } from "../../src/notification/config.ts";
import { ConfigError } from "../../src/shared/config.ts";

/** systemd's EnvironmentFile= lines: KEY=value, comments starting with #. */
function environmentFile(service: string): Record<string, string> {
  const text = readFileSync(new URL(`../../deploy/systemd/${service}.env.example`, import.meta.url), "utf8");
  const entries = text
    .split("\n")
    .filter((line) => line.trim() && !line.startsWith("#"))
    .map((line) => {
      const at = line.indexOf("=");
      return [line.slice(0, at), line.slice(at + 1)] as const;
    });
  return Object.fromEntries(entries);
}

const problems = (load: () => unknown): string[] => {
  try {
    load();
    return [];
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
};

const user = (url: string) => decodeURIComponent(new URL(url).username);

describe.each([
  ["entitlement", EntitlementEnv],
  ["notification", NotificationEnv],
] as const)("deploy/systemd/%s.env.example", (service, schema) => {
  const env = environmentFile(service);

  test("sets only variables of the service's configuration schema", () => {
    const known = new Set(Object.keys(schema.properties));
    expect(Object.keys(env).filter((name) => !known.has(name))).toEqual([]);
  });

  test("offers, commented out, the same database URLs with verified TLS and a CA beside the file", () => {
    const text = readFileSync(new URL(`../../deploy/systemd/${service}.env.example`, import.meta.url), "utf8");
    const tls = `?sslmode=verify-full&sslrootcert=/etc/${service}/pg-ca.pem`;
    for (const name of ["DATABASE_MIGRATION_URL", "DATABASE_URL"])
      expect(text.split("\n"), name).toContain(`#${name}="${env[name]}${tls}"`);
  });

  test("migrates as the schema's owner and serves as the runtime role of docs/security.md", () => {
    expect(user(env.DATABASE_MIGRATION_URL ?? "")).toBe(`${service}_owner`);
    expect(user(env.DATABASE_URL ?? "")).toBe(`${service}_app`);
  });
});

test("the examples are valid configurations; Entitlement's serve still waits for its tokens", () => {
  expect(problems(() => loadNotificationConfig(environmentFile("notification")))).toEqual([]);
  const entitlement = environmentFile("entitlement");
  expect(problems(() => loadEntitlementConfig(entitlement, { requireAuth: false }))).toEqual([]);
  expect(problems(() => loadEntitlementConfig(entitlement)).join("\n")).toContain("ENTITLEMENT_AUTH_TOKENS is not set");
});
