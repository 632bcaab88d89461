// `entitlement partitions`: the list shows every month of the history tables with its rows and size; detach takes one
// month out of the table (its rows leave the audit, the table stays for pg_dump) and drop removes only such a
// detached month; the default partition and attached months are refused.
import { describe, expect, test } from "bun:test";
import {
  detachPartition,
  dropPartition,
  PARTITIONS_USAGE,
  partitionsSubcommand,
  printPartitions,
} from "../../src/entitlement/ops/partitions.ts";
import { monthStart } from "../../src/entitlement/work/partitions/maintenance.ts";
import { useTestDatabase } from "../support/infra.ts";

const f = useTestDatabase("ops_partitions", { service: "entitlement", poolMax: 2 });

function capture() {
  const lines: string[] = [];
  return { lines, out: (line: string) => lines.push(line) };
}

/** The month partition of the audit created ahead by the migration, two months after the template was built. */
async function aheadMonth(): Promise<{ name: string; from: Date }> {
  const [row] = await f.sql<{ partition: string; from_at: Date }[]>`
    select partition, from_at from history_partitions()
    where parent = 'entitlement_audit' and from_at is not null order by from_at desc limit 1`;
  if (!row) throw new Error("no month partition");
  return { name: row.partition, from: row.from_at };
}

describe("partitions list", () => {
  test("prints each partition with its range, estimated rows and size", async () => {
    const { name, from } = await aheadMonth();
    await f.sql`
      insert into entitlement_audit (audit_id, occurred_at, user_id, stock_keeping_unit, action)
      select gen_random_uuid(), ${from}::timestamptz + i * interval '1 minute', 'u', 'sku', 'GRANT'
      from generate_series(1, 50) as i`;
    await f.sql.unsafe(`analyze ${name}`);
    const c = capture();
    expect(await printPartitions({ sql: f.sql, out: c.out })).toBe(0);
    const line = c.lines.find((l) => l.includes(` ${name} `));
    expect(line).toMatch(
      new RegExp(`^entitlement_audit ${name} \\[${from.toISOString()}, \\S+\\) ~50 rows \\d+\\.\\d MiB$`),
    );
    expect(c.lines.some((l) => l.startsWith("entitlement_audit entitlement_audit_default default"))).toBe(true);
    expect(c.lines.some((l) => l.startsWith("point_transactions point_transactions_before_"))).toBe(true);
    expect(c.lines.at(-1)).toMatch(/^\d+ partition\(s\); row counts are the planner's estimates/);
  });
});

describe("partitions detach and drop", () => {
  test("detach takes the month out of the audit and keeps its table; drop then removes it", async () => {
    const { name } = await aheadMonth();
    const count = async () => (await f.sql<{ n: number }[]>`select count(*)::int as n from entitlement_audit`)[0]?.n;
    const before = await count();
    const c = capture();
    expect(await detachPartition({ sql: f.sql, out: c.out }, name)).toBe(0);
    expect(c.lines[0]).toBe(`detached ${name} from entitlement_audit; the table ${name} stays until dropped`);
    expect(c.lines[1]).toContain(`pg_dump --format=custom --table='entitlement.${name}'`);
    expect(await count(), "its 50 rows are no longer in the audit").toBe((before ?? 0) - 50);
    const [kept] = await f.sql.unsafe<{ n: number }[]>(`select count(*)::int as n from ${name}`);
    expect(kept?.n, "the detached table keeps them for the dump").toBe(50);

    const again = capture();
    expect(await detachPartition({ sql: f.sql, out: again.out }, name), "a second detach finds nothing").toBe(1);
    expect(again.lines).toEqual([`${name} is not a month partition of a history table: nothing detached`]);

    const dropped = capture();
    expect(await dropPartition({ sql: f.sql, out: dropped.out }, name)).toBe(0);
    expect(dropped.lines).toEqual([`dropped ${name}`]);
    const [gone] = await f.sql`select to_regclass(${name}) as t`;
    expect(gone?.t).toBeNull();
  });

  test("an attached month and the default partition are refused", async () => {
    const attached = `point_audit_${monthStart(new Date(), 1).toISOString().slice(0, 7).replace("-", "_")}`;
    const c = capture();
    expect(await dropPartition({ sql: f.sql, out: c.out }, attached)).toBe(1);
    expect(c.lines).toEqual([`${attached} is not a detached history partition: nothing dropped (detach it first)`]);
    const [still] = await f.sql`select to_regclass(${attached}) as t`;
    expect(still?.t, "the attached month is untouched").not.toBeNull();
    expect(await partitionsSubcommand({ DATABASE_URL: f.db.url }).run(["detach", "entitlement_audit_default"])).toBe(2);
    await expect(f.sql`select detach_history_partition('entitlement_audit_default')`).rejects.toMatchObject({
      code: "22023",
    });
  });
});

describe("the partitions command", () => {
  test("usage errors exit 2 without touching the database", async () => {
    const nowhere = { DATABASE_URL: "postgres://nobody@127.0.0.1:1/none" };
    for (const args of [[], ["list", "x"], ["detach"], ["detach", "entitlements"], ["drop", "a;b"], ["purge"]]) {
      expect(await partitionsSubcommand(nowhere).run(args)).toBe(2);
    }
    expect(PARTITIONS_USAGE).toContain("detach <partition>");
  });

  test("runs against the configured database and exits 0", async () => {
    expect(await partitionsSubcommand({ DATABASE_URL: f.db.url }).run(["list"])).toBe(0);
  });
});
