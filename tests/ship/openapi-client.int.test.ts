// The OpenAPI document generates a good client: the TypeScript types openapi-typescript makes from it are committed
// and current, the openapi-fetch example of docs/examples/client.ts typechecks against them on its own, and run
// against a live Entitlement it grants, lists with a numeric limit, gets 304 for an If-None-Match of the current
// ETag, reserves points and cancels the reservation.
import { expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { clientExample } from "../../docs/examples/client.ts";
import { newToken, tokenEntryLine } from "../../src/shared/auth/tokens.ts";
import { CLIENT_TYPES, renderClientTypes, STALE_HINT } from "../../tools/docs-openapi.ts";
import { useTestDatabase } from "../support/infra.ts";
import { serve } from "../support/serve.ts";
import { repoRoot } from "./support.ts";

const ENTITLEMENT = join(repoRoot, "src/entitlement/main.ts");
const f = useTestDatabase("openapi_client", { service: "entitlement" });

test("the committed client types are what openapi-typescript makes of docs/openapi.json", async () => {
  expect(readFileSync(CLIENT_TYPES, "utf8"), `docs/examples/entitlement-api.ts is stale: ${STALE_HINT}`).toBe(
    await renderClientTypes(),
  );
});

test("docs/examples/client.ts typechecks against the generated types alone (strict, no project settings)", async () => {
  const dir = mkdtempSync(join(tmpdir(), "client-tsc-"));
  try {
    const config = {
      compilerOptions: {
        strict: true,
        noEmit: true,
        target: "ESNext",
        module: "Preserve",
        moduleResolution: "bundler",
        allowImportingTsExtensions: true,
        skipLibCheck: true,
        types: ["bun"],
        typeRoots: [join(repoRoot, "node_modules/@types")],
      },
      files: [join(repoRoot, "docs/examples/client.ts")],
    };
    writeFileSync(join(dir, "tsconfig.json"), JSON.stringify(config));
    const tsc = Bun.spawn([join(repoRoot, "node_modules/.bin/tsc"), "-p", join(dir, "tsconfig.json")], {
      cwd: repoRoot,
      stdout: "pipe",
      stderr: "pipe",
    });
    const [code, out] = await Promise.all([tsc.exited, new Response(tsc.stdout).text()]);
    expect(out).toBe("");
    expect(code).toBe(0);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}, 120_000);

test("the generated client runs against a live Entitlement: grant, list, 304, reserve, cancel", async () => {
  const token = newToken();
  const { child, port } = serve(ENTITLEMENT, "entitlement", {
    DATABASE_URL: f.db.url,
    NATS_ENABLED: "false",
    ENTITLEMENT_AUTH_TOKENS: tokenEntryLine("client", token, "read+write"),
  });
  try {
    const result = await clientExample(`http://127.0.0.1:${await port}`, token, "u_client");
    expect(result).toEqual({
      granted: "ACTIVE",
      listed: ["item1"],
      checkStatus: 200,
      conditionalStatus: 304,
      reservation: "PENDING",
      cancelled: "CANCELLED",
    });
  } finally {
    child.kill("SIGTERM");
    await child.exited;
  }
}, 120_000);
