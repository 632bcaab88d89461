// compose.yml speaks the services' language: every environment variable it sets for entitlement or notification is
// a key of that service's configuration schema (a typo would otherwise be silently ignored), both services are built
// from the Dockerfile, and every service has a health check. The broker runs deploy/nats/least-privilege.conf, each
// service as its own user.
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { EntitlementEnv } from "../../src/entitlement/config.ts";
import { NotificationEnv } from "../../src/notification/config.ts";
import { documentedRolesSql } from "../e2e/runtime-roles.helpers.ts";

type Service = {
  image?: string;
  build?: { context: string; args?: Record<string, string> };
  environment?: Record<string, string> | string[];
  healthcheck?: { test: string[] };
  profiles?: string[];
  command?: string[];
  depends_on?: Record<string, { condition: string }>;
  volumes?: string[];
};
const repoRoot = resolve(import.meta.dir, "../..");
const compose = Bun.YAML.parse(readFileSync(join(repoRoot, "compose.yml"), "utf8")) as {
  name?: string;
  services: Record<string, Service>;
};

/** Compose's `${VARIABLE:-default}`: the image names can be overridden from the environment. */
const withDefault = (variable: string, value: string) => `\${${variable}:-${value}}`;

function environmentNames(service: Service): string[] {
  const env = service.environment ?? {};
  return Array.isArray(env) ? env.map((e) => e.split("=")[0] as string) : Object.keys(env);
}

describe("compose.yml", () => {
  for (const [name, schema] of [
    ["entitlement", EntitlementEnv],
    ["notification", NotificationEnv],
  ] as const) {
    test(`${name}: every variable set is a key of its configuration schema`, () => {
      const service = compose.services[name];
      expect(service, `compose defines ${name}`).toBeDefined();
      const known = new Set(Object.keys(schema.properties));
      const names = environmentNames(service as Service);
      expect(names.length).toBeGreaterThan(0);
      expect(names.filter((n) => !known.has(n))).toEqual([]);
    });

    test(`${name}: no value is taken from a host variable the services themselves read`, () => {
      // The shell that runs compose may export DATABASE_URL or NATS_URL for the host (`bun run stack`, the test
      // preload does): interpolated into the container, such an address points at the container itself.
      const known = new Set(Object.keys(schema.properties));
      const env = (compose.services[name] as Service).environment as Record<string, string>;
      const interpolated = Object.values(env).flatMap((v) => [...String(v).matchAll(/\$\{(\w+)/g)].map((m) => m[1]));
      expect(interpolated.filter((v) => known.has(v as string))).toEqual([]);
    });

    test(`${name}: built from the Dockerfile with SERVICE=${name}, with a health check`, () => {
      const service = compose.services[name] as Service;
      expect(service.build?.context).toBe(".");
      expect(service.build?.args?.SERVICE).toBe(name);
      expect(service.healthcheck?.test).toEqual(["CMD", "/app/service", "healthcheck"]);
    });
  }

  test("no top-level name (docker-compose 1.29 refuses it); the builder image is a build argument", () => {
    expect(Object.keys(compose)).not.toContain("name");
    for (const name of ["entitlement", "notification"])
      expect(compose.services[name]?.build?.args?.BUN_IMAGE).toBe(withDefault("BUN_IMAGE", "oven/bun:1.4.4"));
  });

  test("optional nats-cluster profile: three JetStream nodes routed to each other, used through COMPOSE_NATS_URL", () => {
    const nodes = ["nats-1", "nats-2", "nats-3"];
    for (const name of nodes) {
      const node = compose.services[name] as Service;
      expect(node.profiles, `${name} starts only with the profile`).toEqual(["nats-cluster"]);
      expect(node.command).toContain("-js");
      expect(node.command?.[node.command.indexOf("-n") + 1], "each node has its own server name").toBe(name);
      const routes = node.command?.[node.command.indexOf("--routes") + 1] ?? "";
      expect(routes.split(","), "every node routes to all three").toEqual(nodes.map((n) => `nats://${n}:6222`));
      expect(node.healthcheck?.test.length).toBeGreaterThan(0);
    }
    const env = (name: string) => compose.services[name]?.environment as Record<string, string>;
    for (const name of ["entitlement", "notification"])
      expect(env(name).NATS_URL, "the single node unless COMPOSE_NATS_URL names the cluster").toBe(
        withDefault("COMPOSE_NATS_URL", "nats://nats:4222"),
      );
    expect(env("entitlement").ENTITLEMENT_NATS_STREAM_REPLICAS).toBe(withDefault("NATS_STREAM_REPLICAS", "1"));
    expect(env("notification").NOTIFICATION_NATS_STREAM_REPLICAS).toBe(withDefault("NATS_STREAM_REPLICAS", "1"));
  });

  test("PostgreSQL 16 and NATS 2.11 with JetStream, both with health checks", () => {
    expect(compose.services.postgres?.image).toBe(withDefault("POSTGRES_IMAGE", "postgres:16-alpine"));
    expect(compose.services.nats?.image).toBe(withDefault("NATS_IMAGE", "nats:2.11-alpine"));
    expect(compose.services.nats?.command).toContain("-js");
    for (const infra of ["postgres", "nats"])
      expect(compose.services[infra]?.healthcheck?.test.length).toBeGreaterThan(0);
  });

  test("the broker runs the least-privilege configuration; each service is its own user with the file's demo password", () => {
    const nats = compose.services.nats;
    const command = nats?.command ?? [];
    expect(command[command.indexOf("-c") + 1]).toBe("/etc/nats/least-privilege.conf");
    expect(nats?.volumes).toContain("./deploy/nats/least-privilege.conf:/etc/nats/least-privilege.conf:ro");
    const conf = readFileSync(join(repoRoot, "deploy/nats/least-privilege.conf"), "utf8");
    for (const name of ["entitlement", "notification"]) {
      const env = compose.services[name]?.environment as Record<string, string>;
      expect(env.NATS_USER, `${name} connects as its own user`).toBe(name);
      // The file marks each demo password right above its user (the hash is checked by the least-privilege e2e test).
      expect(conf).toContain(`# DEMO password: ${env.NATS_PASSWORD}\n        user: ${name}\n`);
    }
  });
});

describe("compose.yml's PostgreSQL roles (deploy/postgres/roles.sql)", () => {
  const rolesSql = readFileSync(join(repoRoot, "deploy/postgres/roles.sql"), "utf8");
  const passwords: Record<string, string> = Object.fromEntries(
    [...rolesSql.matchAll(/^create role (\w+) login password '([^']+)'/gm)].map((m) => [
      m[1] as string,
      m[2] as string,
    ]),
  );

  test("postgres-roles runs the file as the superuser, in one transaction, once PostgreSQL is healthy", () => {
    const roles = compose.services["postgres-roles"] as Service;
    expect(roles.image).toBe(withDefault("POSTGRES_IMAGE", "postgres:16-alpine"));
    expect(roles.depends_on).toEqual({ postgres: { condition: "service_healthy" } });
    expect(roles.volumes).toEqual(["./deploy/postgres/roles.sql:/roles.sql:ro"]);
    expect(roles.command).toEqual(
      expect.arrayContaining(["psql", "--single-transaction", "--set=ON_ERROR_STOP=1", "--file=/roles.sql"]),
    );
  });

  test("its first-up block is docs/security.md's SQL word for word, but for the demo passwords", () => {
    const block = /^\\if :first_up\n([\s\S]*?)^\\endif$/m.exec(rolesSql)?.[1];
    expect(block?.replace(/password '[^']+'/g, "password '...'")).toBe(documentedRolesSql());
    expect(
      Object.values(passwords).every((p) => p.startsWith("demo-")),
      "demo passwords say so",
    ).toBe(true);
  });

  for (const name of ["entitlement", "notification"]) {
    test(`${name} waits for the roles, migrates as its owner and serves as its runtime role`, () => {
      const service = compose.services[name] as Service;
      const env = service.environment as Record<string, string>;
      const login = (url: string | undefined) => {
        const u = new URL(url ?? "");
        return [u.username, u.password];
      };
      expect(service.depends_on?.["postgres-roles"]).toEqual({ condition: "service_completed_successfully" });
      expect(login(env.DATABASE_MIGRATION_URL)).toEqual([`${name}_owner`, passwords[`${name}_owner`] ?? "a password"]);
      expect(login(env.DATABASE_URL)).toEqual([`${name}_app`, passwords[`${name}_app`] ?? "a password"]);
    });
  }
});
