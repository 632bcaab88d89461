// Multi-host DATABASE_URL with target_session_attrs=read-write (docs/configuration.md) across a real failover: a private primary
// with a synchronous standby (tests/support/postgres-pair.ts). The test failed at both steps before
// patches/postgres@3.4.9.patch taught postgres.js two things libpq does:
// 1. read-write rejects a server in hot standby: a standby reports default_transaction_read_only=off (only
//    transaction_read_only is on), so the driver took a standby listed first for a writable server.
// 2. one round over the hosts, then the query fails: with the primary dead and the standby not yet promoted, the
//    driver cycled through the hosts without a pause and the query waited for ever (no connect_timeout applied).
import { afterAll, beforeAll, expect, test } from "bun:test";
import postgres from "postgres";
import { reconnectDelaySeconds } from "../../src/shared/db.ts";
import { type PostgresPair, startPostgresPair } from "../support/postgres-pair.ts";
import { waitUntil } from "../support/wait.ts";

let pair: PostgresPair;

beforeAll(async () => {
  pair = await startPostgresPair();
}, 60_000);

afterAll(() => pair?.dispose());

const open = (url: string) =>
  postgres(url, { max: 4, connect_timeout: 3, backoff: reconnectDelaySeconds, onnotice: () => {} });

/** Settles within `ms` or says it did not (a hung query must fail the test, not hang it). */
const within = <T>(work: Promise<T>, ms: number) =>
  Promise.race([
    work.then(
      (value) => ({ value }),
      (error: Error) => ({ error }),
    ),
    Bun.sleep(ms).then(() => "hung"),
  ]);

test("a read-write connection passes over the standby listed first and the primary dies, then follows the promotion", async () => {
  const sql = open(pair.url);
  const standby = postgres(pair.standby.url, { max: 1, onnotice: () => {} });
  const sessions = async () => {
    const [row] = await standby<
      { n: number }[]
    >`select sessions::int as n from pg_stat_database where datname = 'postgres'`;
    return row?.n ?? 0;
  };
  try {
    const [where] = await sql<{ standby: boolean; port: number }[]>`
        select pg_is_in_recovery() as standby, inet_server_port() as port`;
    expect(where?.standby, "the standby (first in the URL) is not taken for the writable host").toBe(false);
    expect(where?.port).toBe(pair.primary.port);
    await sql`create table acked (id int primary key)`;
    for (let id = 0; id < 50; id++) await sql`insert into acked values (${id})`;

    const before = await sessions();
    pair.killPrimary();
    const started = Date.now();
    let tries = 0;
    while (Date.now() - started < 2_000) {
      tries++;
      const outcome = await within(sql`insert into acked values (${1000 + tries})`, 6_000);
      expect(outcome, "with no writable host a query fails after one round of the hosts").not.toBe("hung");
      expect(outcome, "and it does fail: the standby never takes the write").toHaveProperty("error");
      await Bun.sleep(50);
    }
    // Each failed query costs one round (one session on the standby) and the pool backs off between rounds; the
    // unpatched driver opened sessions on the standby as fast as it could fork them.
    expect(await sessions(), "sessions opened on the standby while no host was writable").toBeLessThan(before + 60);

    await pair.promote();
    const [after] = await waitUntil(
      () =>
        sql<{ port: number }[]>`insert into acked values (9999) returning inet_server_port() as port`.catch(
          () => undefined,
        ),
      "a write after the promotion",
      15_000,
      50,
    );
    expect(after?.port, "the pool writes on the promoted standby").toBe(pair.standby.port);
    const [kept] = await sql<{ n: number }[]>`select count(*)::int as n from acked where id < 50`;
    expect(kept?.n, "every insert acknowledged before the primary died is on the promoted standby").toBe(50);
  } finally {
    await sql.end({ timeout: 1 });
    await standby.end({ timeout: 1 });
  }
}, 60_000);
