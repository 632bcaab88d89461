// A service that cannot log in to its database at boot says so in one log line and exits 1: no uncaught exception
// with library source lines, no password.
import { expect, test } from "bun:test";
import { postgresAdminUrl } from "../support/infra.ts";
import { runCommand } from "../support/process.ts";

const MAIN = {
  entitlement: new URL("../../src/entitlement/main.ts", import.meta.url).pathname,
  notification: new URL("../../src/notification/main.ts", import.meta.url).pathname,
};

for (const [service, main] of Object.entries(MAIN)) {
  test(`${service}: a refused login at boot is one log line and exit 1`, async () => {
    const url = new URL(await postgresAdminUrl());
    url.username = "no_such_role_at_boot";
    url.password = "Boot-Pw-never-printed";
    const env = {
      PATH: process.env.PATH,
      DATABASE_URL: url.toString(),
      ENTITLEMENT_AUTH_DISABLED: "true",
      NATS_ENABLED: "false",
      PORT: "0",
    };
    const ran = await runCommand([process.execPath, main, "serve"], { env, timeoutMs: 30_000 });
    const lines = `${ran.stdout}\n${ran.stderr}`.split("\n").filter((l) => l.trim() !== "");
    expect(ran.code, `${service} exits 1`).toBe(1);
    expect(lines.length, `one line: ${lines.join("\n")}`).toBe(1);
    const line = JSON.parse(lines[0] ?? "{}");
    expect(line).toMatchObject({ level: "fatal", service, code: "28000", msg: "cannot start: database" });
    expect(lines[0]).not.toContain("Boot-Pw-never-printed");
  }, 60_000);
}
