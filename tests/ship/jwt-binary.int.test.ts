// The compiled Entitlement executable verifies JWT access tokens (jose inside `bun build --compile`): pointed at the
// test OpenID provider, it fetches the keys through discovery, serves a client-credentials token and refuses an
// algorithm-confusion forgery, with the reason counted.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { SignJWT } from "jose";
import { CLIENTS, IDP_AUDIENCE, startTestIdp, type TestIdp } from "../support/idp.ts";
import { runCommand } from "../support/process.ts";
import { builtBinary, emptyDatabase, freePort, waitForOk } from "./support.ts";

const BUILD_TIMEOUT = 240_000;
let database: Awaited<ReturnType<typeof emptyDatabase>> | undefined;
let idp: TestIdp;
let child: Bun.Subprocess | undefined;
let base: string;

beforeAll(async () => {
  const binary = await builtBinary("entitlement");
  idp = await startTestIdp();
  database = await emptyDatabase("ship_jwt");
  const url = database.url;
  const port = await freePort();
  const env = {
    PATH: "/usr/sbin:/usr/bin:/sbin:/bin",
    LOG_LEVEL: "warn",
    DATABASE_URL: url,
    NATS_ENABLED: "false",
    HOST: "127.0.0.1",
    PORT: String(port),
    ENTITLEMENT_AUTH_JWT_ISSUER: idp.issuer,
    ENTITLEMENT_AUTH_JWT_AUDIENCE: IDP_AUDIENCE,
  };
  const migrate = await runCommand([binary, "migrate"], { env });
  expect(migrate.code, migrate.stderr).toBe(0);
  const started = Bun.spawn([binary, "serve"], { env, stdout: "ignore", stderr: "ignore" });
  child = started;
  base = `http://127.0.0.1:${port}`;
  await waitForOk(`${base}/readyz`, 30_000, () => started.exitCode === null);
}, BUILD_TIMEOUT);

afterAll(async () => {
  child?.kill();
  await child?.exited;
  await idp?.close();
  await database?.drop();
  // Dropping the database waits for a checkpoint: seconds on a busy server.
}, 30_000);

test("the executable accepts the provider's token and refuses an HS256 forgery with the public key", async () => {
  const token = await idp.token(CLIENTS.payments);
  const read = (bearer: string, path = "/v1/users/u/entitlements") =>
    fetch(`${base}${path}`, { headers: { authorization: `Bearer ${bearer}` } });
  expect((await read(token)).status).toBe(200);
  const forged = await new SignJWT(idp.claims())
    .setProtectedHeader({ alg: "HS256", kid: idp.key().kid })
    .sign(new TextEncoder().encode(JSON.stringify(idp.key().publicJwk)));
  const refused = await read(forged);
  expect([refused.status, refused.headers.get("www-authenticate")]).toEqual([401, 'Bearer error="invalid_token"']);
  const metrics = await (await read(token, "/metrics")).text();
  expect(metrics).toMatch(/entitlement_auth_refusals_total\{reason="algorithm"[^}]*\} 1/);
  expect(metrics).toMatch(/entitlement_auth_jwks_fetches_total\{outcome="ok"[^}]*\} 1/);
}, 30_000);
