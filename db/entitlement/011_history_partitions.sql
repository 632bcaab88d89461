-- The history that is never deleted by row (entitlement_audit, point_transactions, point_audit) becomes natively
-- partitioned by month (UTC) of its time column: queries, vacuum and archiving work on one month at a time, and old
-- months are detached and dropped (or dumped) whole instead of deleted row by row. Stock PostgreSQL, no extension.
-- Runs with search_path = entitlement, in the one transaction of the migration run.
--
-- An existing table is not copied. It is renamed to <table>_before_YYYY_MM and attached, as it is, as the partition of
-- everything before the first month of the new layout (the month after this migration runs). The attach needs proof
-- that no row lies outside that range: a CHECK constraint added NOT VALID and then validated (one sequential scan of
-- the table, no rewrite, no index build), which ATTACH PARTITION accepts instead of scanning again. Everything runs
-- in one transaction, so a scan here would keep the old table locked (ACCESS EXCLUSIVE, taken by the rename) for its
-- whole duration. So the proof is made beforehand, outside this transaction, while writers go on: the preparation
-- (prepare/011_history_partitions.sql, run by the migration runner first) or an operator adds the constraint
-- <table>_before_partitioning and validates it, and this migration uses it instead of scanning. Only a table the
-- preparation could not lock in time is validated here, under the lock (docs/operations.md).
--
-- A primary key of a partitioned table must contain the partition key; the old tables' keys do not, and rebuilding
-- them would be an index build on the whole table under the lock. So the parents declare no primary key: each
-- partition has its own on the id (the old table keeps the one it has), which is unique within its month. The ids are
-- random UUIDs drawn once per row, and a row's month is fixed when it is written, so a duplicate across months would
-- need a UUID collision. The ledger's one-row-per-reservation rule, which was a unique index across the whole table,
-- is likewise unique per partition and enforced across months by the statement that writes the ledger
-- (points/due-queries.ts). The parents' indexes are declared with the old tables' exact definitions, so ATTACH adopts
-- the existing indexes instead of building new ones.
--
-- Partitions are created ahead (three months here, then by the service's partition maintenance), and a DEFAULT
-- partition takes any row outside them so that no insert can fail for want of a partition; the maintenance counts its
-- rows (entitlement_history_default_rows, alert EntitlementHistoryOutsidePartitions) and moves them into their month
-- when it creates it. plpgsql bodies that name these tables (entitlement_command) resolve the name at execution, so
-- they write into the partitioned parent unchanged.

-- The partitioned tables and their partition key column; null for any other name.
create function history_partition_column(p_parent text) returns text
language sql immutable as $$
  select case p_parent
    when 'entitlement_audit' then 'occurred_at'
    when 'point_transactions' then 'created_at'
    when 'point_audit' then 'occurred_at'
  end
$$;

-- What each partition adds that a parent cannot declare: its keys (unique within the partition).
create function history_partition_keys(p_parent text) returns text
language sql immutable as $$
  select case p_parent
    when 'entitlement_audit' then 'primary key (audit_id)'
    when 'point_transactions' then 'primary key (transaction_id), unique (reservation_id)'
    when 'point_audit' then 'primary key (audit_id)'
  end
$$;

-- Every partition of the partitioned history tables with its bounds (from_at null: no lower bound; both null: the
-- default partition), read from the catalog, so a partition detached or attached by hand is seen as it is.
create function history_partitions()
returns table (parent text, partition text, from_at timestamptz, to_at timestamptz, is_default boolean)
language sql stable set search_path from current as $$
  select p.relname::text, c.relname::text,
         substring(b.expr from 'FROM \(''([^'']*)''\)')::timestamptz,
         substring(b.expr from 'TO \(''([^'']*)''\)')::timestamptz,
         b.expr = 'DEFAULT'
  from pg_inherits i
  join pg_class p on p.oid = i.inhparent
  join pg_class c on c.oid = i.inhrelid
  cross join lateral (select pg_get_expr(c.relpartbound, c.oid) as expr) b
  where p.relnamespace = (select n.oid from pg_namespace n where n.nspname = current_schema()) and history_partition_column(p.relname) is not null
$$;

-- Creates the partition of one month (UTC) of a history table unless it exists or an existing partition already
-- covers that month; returns whether it created it. Rows the default partition holds for that month are moved into
-- it first, so creating a month never fails because of them. Run by the service's runtime role, which may not create
-- tables itself: SECURITY DEFINER, limited to the tables above, with a fixed search_path (pg_temp last, so that a
-- caller's temporary table cannot stand in for one of these). lock_timeout bounds each
-- wait, so the maintenance gives up (and retries at its next run) rather than queue in front of the writers.
create function create_history_partition(p_parent text, p_month date) returns boolean
language plpgsql security definer set search_path = entitlement, pg_temp as $$
declare
  v_column text := history_partition_column(p_parent);
  v_from timestamptz := date_trunc('month', p_month::timestamp) at time zone 'UTC';
  v_to timestamptz := (date_trunc('month', p_month::timestamp) + interval '1 month') at time zone 'UTC';
  v_name text := format('%s_%s', p_parent, to_char(p_month, 'YYYY_MM'));
begin
  if v_column is null then
    raise exception 'not a partitioned history table: %', p_parent using errcode = 'invalid_parameter_value';
  end if;
  perform set_config('lock_timeout', '5s', true);
  -- Two replicas maintaining at once would otherwise race to create the same table.
  perform pg_advisory_xact_lock(hashtext('history partition ' || p_parent));
  if exists (
    select from history_partitions() h
    where h.parent = p_parent and not h.is_default
      and coalesce(h.from_at, '-infinity') < v_to and h.to_at > v_from
  ) then
    return false;
  end if;
  execute format('create table %I (like %I including defaults including constraints, %s)',
                 v_name, p_parent, history_partition_keys(p_parent));
  -- Proves the range to ATTACH so that it does not scan the new table again.
  execute format('alter table %I add constraint %I check (%I >= %L and %I < %L)',
                 v_name, v_name || '_month', v_column, v_from, v_column, v_to);
  execute format('with moved as (delete from %I where %I >= %L and %I < %L returning *) insert into %I select * from moved',
                 p_parent || '_default', v_column, v_from, v_column, v_to, v_name);
  execute format('alter table %I attach partition %I for values from (%L) to (%L)', p_parent, v_name, v_from, v_to);
  return true;
end $$;

-- Detaches one month (or the partition of the rows from before the partitioning) for archiving or dropping; returns
-- the table's parent. The table stays, under its own name, until someone drops it. The default partition is never
-- detached: it is what keeps inserts from failing.
create function detach_history_partition(p_partition text) returns text
language plpgsql security definer set search_path = entitlement, pg_temp as $$
declare
  v_parent text;
begin
  select h.parent into v_parent from history_partitions() h where h.partition = p_partition and not h.is_default;
  if v_parent is null then
    raise exception 'not a month partition of a history table: %', p_partition using errcode = 'invalid_parameter_value';
  end if;
  perform set_config('lock_timeout', '5s', true);
  execute format('alter table %I detach partition %I', v_parent, p_partition);
  return v_parent;
end $$;

-- Drops a history partition that has been detached; anything else is refused.
create function drop_detached_history_partition(p_partition text) returns void
language plpgsql security definer set search_path = entitlement, pg_temp as $$
begin
  if p_partition !~ '^(entitlement_audit|point_transactions|point_audit)_(before_)?[0-9]{4}_[0-9]{2}$'
     or not exists (select from pg_class c where c.relname = p_partition and c.relkind = 'r'
                    and c.relnamespace = (select n.oid from pg_namespace n where n.nspname = current_schema()) and not c.relispartition) then
    raise exception 'not a detached history partition: %', p_partition using errcode = 'invalid_parameter_value';
  end if;
  perform set_config('lock_timeout', '5s', true);
  execute format('drop table %I', p_partition);
end $$;

revoke execute on function create_history_partition(text, date), detach_history_partition(text),
  drop_detached_history_partition(text) from public;
grant execute on function create_history_partition(text, date), detach_history_partition(text),
  drop_detached_history_partition(text), history_partitions() to entitlement_runtime;

-- The conversion of one existing table, as described at the top; dropped once the three are done. A plain function
-- of the schema, not one in pg_temp: a deployment may deny the migrating role TEMP on the database. p_indexes holds
-- pairs (name, definition) of the old table's indexes other than its keys.
create function partition_history_table(p_parent text, p_columns text, p_indexes text[]) returns void
language plpgsql as $$
declare
  v_column text := history_partition_column(p_parent);
  v_first date := (date_trunc('month', now() at time zone 'UTC') + interval '1 month')::date;
  v_bound timestamptz;
  v_before text;
  v_proved boolean := false;
  v_index text[];
begin
  -- A bound an operator has proved ahead, outside this transaction (docs/operations.md): the constraint
  -- <table>_before_partitioning, check (<column> < 'first instant of a month'), validated. Then nothing is scanned.
  select substring(pg_get_constraintdef(c.oid) from '''([^'']+)''')::timestamptz into v_bound
  from pg_constraint c
  where c.conrelid = p_parent::regclass and c.conname = p_parent || '_before_partitioning' and c.convalidated;
  if v_bound is not null then
    if v_bound <> date_trunc('month', v_bound at time zone 'UTC') at time zone 'UTC' then
      raise exception '%_before_partitioning must bound % by the first instant of a month (UTC), not %',
        p_parent, v_column, v_bound;
    end if;
    v_first := (v_bound at time zone 'UTC')::date;
    v_proved := true;
  end if;
  v_bound := v_first::timestamp at time zone 'UTC';
  v_before := format('%s_before_%s', p_parent, to_char(v_first, 'YYYY_MM'));
  execute format('alter table %I rename to %I', p_parent, v_before);
  execute format('create table %I (%s) partition by range (%I)', p_parent, p_columns, v_column);
  -- The parent's indexes take the old names (code and docs refer to them) and the old definitions, created before the
  -- attach so that ATTACH adopts the old table's index instead of building one.
  foreach v_index slice 1 in array p_indexes loop
    execute format('alter index %I rename to %I', v_index[1], v_before || '_' || v_index[1]);
    execute format('create index %I on %I %s', v_index[1], p_parent, v_index[2]);
  end loop;
  if not v_proved then
    execute format('alter table %I add constraint %I check (%I < %L) not valid', v_before, v_before || '_range',
                   v_column, v_bound);
    execute format('alter table %I validate constraint %I', v_before, v_before || '_range');
  end if;
  execute format('alter table %I attach partition %I for values from (minvalue) to (%L)', p_parent, v_before,
                 v_bound);
  execute format('create table %I partition of %I (%s) default', p_parent || '_default', p_parent,
                 history_partition_keys(p_parent));
  for i in 0..2 loop
    perform create_history_partition(p_parent, (v_first + make_interval(months => i))::date);
  end loop;
end $$;

-- Each parent has the old table's columns and checks, under the same names: ATTACH matches them by name.
select partition_history_table('entitlement_audit', $$
  audit_id uuid not null,
  occurred_at timestamptz not null default now(),
  user_id text not null,
  stock_keeping_unit text not null,
  action text not null constraint entitlement_audit_action_check
    check (action in ('GRANT', 'REVOKE', 'EXPIRE', 'EXTEND')),
  source text,
  source_id text,
  request_id text,
  detail jsonb,
  caller text,
  trace_id text,
  version bigint
$$, array[['entitlement_audit_history_idx',
           '(user_id, stock_keeping_unit, (coalesce(version, -1)) desc, occurred_at desc, audit_id desc)']]);

select partition_history_table('point_transactions', $$
  transaction_id uuid not null,
  reservation_id uuid not null,
  user_id text not null,
  point_amount bigint not null,
  reason text,
  created_at timestamptz not null
$$, array[['point_transactions_user_idx', '(user_id, created_at desc, transaction_id desc)']]);

select partition_history_table('point_audit', $$
  audit_id uuid not null,
  occurred_at timestamptz not null,
  reservation_id uuid not null,
  user_id text not null,
  action text not null constraint point_audit_action_check
    check (action in ('RESERVE', 'CANCEL', 'EXECUTE', 'FAIL', 'REQUEUE')),
  caller text,
  trace_id text,
  detail jsonb
$$, array[['point_audit_reservation_idx', '(reservation_id, occurred_at)']]);

drop function partition_history_table(text, text, text[]);
