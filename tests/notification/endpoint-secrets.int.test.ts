// An endpoint's old secrets across several rotations: each kept until its own overlap ends (at most three besides the
// previous one), all ended by a rotation without overlap, and sealed again by reseal like the current one.
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { MAX_OLDER_SECRETS } from "../../src/notification/features/endpoints/queries.ts";
import { createSecretBox } from "../../src/notification/features/endpoints/secrets.ts";
import { resealSecrets } from "../../src/notification/ops/reseal.ts";
import { useTestDatabase } from "../support/infra.ts";
import { endpointApp, endpointConfig, SECRET_KEY } from "./endpoints.helpers.ts";

setDefaultTimeout(30_000);

const f = useTestDatabase("notif_endpoint_secrets", { service: "notification" });

type Stored = {
  previous_secret_ciphertext: string | null;
  older_secrets: { sealed: string; until: string }[];
};

async function register() {
  const { call } = endpointApp(f.sql);
  const created = await call("POST", "/v1/webhook-endpoints", { url: "http://127.0.0.1:9/secrets" });
  const id = created.body.endpoint_id as string;
  const rotate = async (overlap: string) =>
    (await call("POST", `/v1/webhook-endpoints/${id}/secret/rotate`, { overlap })).body.secret as string;
  const stored = async () => {
    const [row] = await f.sql<Stored[]>`
      select previous_secret_ciphertext, older_secrets from webhook_endpoints where endpoint_id = ${id}`;
    return row as Stored;
  };
  return { id, first: created.body.secret as string, rotate, stored };
}

describe("old endpoint secrets", () => {
  test("rotations within each other's overlap keep the latest-ending old secrets, at most three besides the previous one", async () => {
    const e = await register();
    const box = createSecretBox(Buffer.from(SECRET_KEY, "hex"));
    const secrets: string[] = [e.first];
    for (const overlap of ["1h", "5h", "2h", "4h", "3h"]) secrets.push(await e.rotate(overlap));
    const row = await e.stored();
    expect(row.older_secrets).toHaveLength(MAX_OLDER_SECRETS);
    // secrets[i] was replaced by rotation i + 1, whose overlap it got: 1h, 5h, 2h, 4h, 3h. The last is the previous one.
    expect(box.open(e.id, row.previous_secret_ciphertext ?? "")).toBe(secrets[4] as string);
    expect(
      row.older_secrets.map((o) => box.open(e.id, o.sealed)),
      "the older ones, latest-ending first; the one ending first is dropped",
    ).toEqual([secrets[1], secrets[3], secrets[2]] as string[]);
  });

  test("a rotation without overlap ends every old secret at once", async () => {
    const e = await register();
    await e.rotate("1h");
    await e.rotate("1h");
    expect((await e.stored()).older_secrets).toHaveLength(1);
    await e.rotate("0s");
    expect(await e.stored()).toEqual({ previous_secret_ciphertext: null, older_secrets: [] });
  });

  test("reseal seals the older secrets with the current key too", async () => {
    const e = await register();
    const middle = await e.rotate("2h");
    await e.rotate("1h");
    const newKey = "c".repeat(64);
    const config = endpointConfig({
      NOTIFICATION_ENDPOINT_SECRET_KEY: newKey,
      NOTIFICATION_ENDPOINT_PREVIOUS_SECRET_KEYS: SECRET_KEY,
    });
    const lines: string[] = [];
    expect(await resealSecrets({ sql: f.sql, out: (l) => lines.push(l), config })).toBe(0);
    expect(lines).toContain(`endpoint ${e.id}: sealed with the current key`);
    const onlyNew = createSecretBox(Buffer.from(newKey, "hex"));
    const row = await e.stored();
    expect(row.older_secrets.map((o) => onlyNew.open(e.id, o.sealed))).toEqual([e.first]);
    expect(onlyNew.open(e.id, row.previous_secret_ciphertext ?? "")).toBe(middle);
  });
});
