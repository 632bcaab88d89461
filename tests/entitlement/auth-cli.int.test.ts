// The executable's side of authentication: `serve` refuses to start without tokens (exit 78, naming both variables),
// `migrate` does not need them, and `token new` prints a token whose entry the service accepts.
import { expect, setDefaultTimeout, test } from "bun:test";
import { join, resolve } from "node:path";
import { loadEntitlementConfig } from "../../src/entitlement/config.ts";
import { findTokenEntry } from "../../src/shared/auth/tokens.ts";
import { EXIT_CONFIG } from "../../src/shared/config.ts";
import { runCommand } from "../support/process.ts";

// Each test starts up to four processes; on a loaded 2-core machine that took more than the 5 s default.
setDefaultTimeout(60_000);

const main = join(resolve(import.meta.dir, "../.."), "src/entitlement/main.ts");

function run(args: string[], env: Record<string, string> = {}) {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("ENTITLEMENT_AUTH")));
  return runCommand([process.execPath, main, ...args], {
    env: { ...clean, DATABASE_URL: "postgres://postgres@127.0.0.1:9/none", LOG_LEVEL: "silent", ...env },
    timeoutMs: 20_000,
  });
}

test("serve without tokens and without ENTITLEMENT_AUTH_DISABLED=true exits 78 before touching the database", async () => {
  const r = await run(["serve"]);
  expect(r.code).toBe(EXIT_CONFIG);
  expect(r.stderr).toContain("ENTITLEMENT_AUTH_TOKENS is not set and ENTITLEMENT_AUTH_DISABLED is not true");
});

test("serve with a malformed entry exits 78 naming the entry, without echoing it", async () => {
  const r = await run(["serve"], { ENTITLEMENT_AUTH_TOKENS: "payments:ent_PastedTokenByMistake:write" });
  expect(r.code).toBe(EXIT_CONFIG);
  expect(r.stderr).toContain("ENTITLEMENT_AUTH_TOKENS entry 1 (payments): the digest must be 64 hex characters");
  expect(r.stderr).not.toContain("ent_PastedTokenByMistake");
});

test("token new prints a token and an entry the configuration accepts; usage errors exit 2", async () => {
  const r = await run(["token", "new", "payments", "write"]);
  expect(r.code, r.stderr).toBe(0);
  const token = /^token: (\S+)$/m.exec(r.stdout)?.[1] as string;
  const entry = /^entry: (\S+)$/m.exec(r.stdout)?.[1] as string;
  expect(token).toStartWith("ent_");
  const config = loadEntitlementConfig({ ENTITLEMENT_AUTH_TOKENS: entry });
  expect(findTokenEntry(config.auth.tokens, token)?.name).toBe("payments");
  expect((await run(["token", "new", "Payments!", "write"])).code).toBe(2);
  expect((await run(["token", "new", "payments", "admin"])).code).toBe(2);
  expect((await run(["--help"])).stdout).toContain("token");
  // Four starts of the service from source: over 5 s on a loaded CI machine.
}, 60_000);
