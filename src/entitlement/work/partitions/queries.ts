// SQL of the monthly partitions of the history tables (migration 011): creation ahead of time, the default
// partition's row count, the list, and detach and drop for archiving and retention. The DDL itself lives in the
// database functions of that migration, which the runtime role may call but whose tables it may not create or drop.
import type { Db } from "../../../shared/db.ts";

/** The tables partitioned by month (UTC) of their time column. */
export const HISTORY_TABLES = ["entitlement_audit", "point_transactions", "point_audit"] as const;
export type HistoryTable = (typeof HISTORY_TABLES)[number];

export type PartitionRow = {
  parent: HistoryTable;
  partition: string;
  /** Null: no lower bound (the rows from before the partitioning, or the default partition). */
  from_at: Date | null;
  /** Null only for the default partition. */
  to_at: Date | null;
  is_default: boolean;
  /** The planner's estimate (pg_class.reltuples, as of the last ANALYZE); -1 when never analyzed. */
  estimated_rows: number;
  /** Table, indexes and TOAST. */
  bytes: number;
};

/** Creates the partition of the month starting at `month` (UTC) unless one covers it; true when it created it. */
export async function createHistoryPartition(db: Db, args: { parent: HistoryTable; month: Date }): Promise<boolean> {
  const [row] = await db<{ created: boolean }[]>`
    select create_history_partition(${args.parent}, ${args.month.toISOString().slice(0, 10)}::date) as created`;
  return row?.created ?? false;
}

export async function listHistoryPartitions(db: Db): Promise<PartitionRow[]> {
  return db<PartitionRow[]>`
    select h.parent, h.partition, h.from_at, h.to_at, h.is_default, c.reltuples::float8 as estimated_rows,
           pg_total_relation_size(c.oid)::float8 as bytes
    from history_partitions() h
    join pg_class c on c.oid = to_regclass(h.partition)
    order by h.parent, h.is_default, h.from_at nulls first`;
}

/**
 * Rows in each table's default partition, counted up to `cap` so that a default that has filled up by mistake still
 * costs a bounded scan: it should hold none (the partitions are created months ahead).
 */
export async function countDefaultPartitionRows(db: Db, cap: number): Promise<Record<HistoryTable, number>> {
  const counts: [HistoryTable, number][] = [];
  for (const parent of HISTORY_TABLES) {
    const [row] = await db<{ n: number }[]>`
      select count(*)::int as n from (select from ${db(`${parent}_default`)} limit ${cap}) d`;
    counts.push([parent, row?.n ?? 0]);
  }
  return Object.fromEntries(counts) as Record<HistoryTable, number>;
}

/** The month partitions of `parent` whose every row is older than `threshold` (their upper bound is not after it). */
export async function findPartitionsBefore(db: Db, args: { parent: HistoryTable; threshold: Date }): Promise<string[]> {
  const rows = await db<{ partition: string }[]>`
    select partition from history_partitions()
    where parent = ${args.parent} and not is_default and to_at <= ${args.threshold}
    order by to_at`;
  return rows.map((r) => r.partition);
}

/** Detaches one month partition; returns its parent. Refused (SQLSTATE 22023) for anything else. */
export async function detachHistoryPartition(db: Db, partition: string): Promise<string> {
  const [row] = await db<{ parent: string }[]>`select detach_history_partition(${partition}) as parent`;
  return row?.parent ?? "";
}

/** Drops a detached history partition. Refused (SQLSTATE 22023) for anything else. */
export async function dropDetachedHistoryPartition(db: Db, partition: string): Promise<void> {
  await db`select drop_detached_history_partition(${partition})`;
}
