-- Runs before migration 011's transaction, each part in a transaction of its own, while the old version may still be
-- writing: it proves, for each history table that is still a plain table, that every row lies before the first month
-- of the new layout, so that the migration attaches the table without scanning it under its lock. The proof is the
-- constraint <table>_before_partitioning, check (<time column> < the first instant of the month after next, UTC):
-- added NOT VALID (a catalog change; lock_timeout bounds its short wait behind running writers, and a table whose lock
-- cannot be had is left to the migration's own scan), then validated (one sequential scan under SHARE UPDATE
-- EXCLUSIVE, which lets inserts and updates go on). The month after next, not the next: a validation that runs past
-- the turn of a month must not refuse the rows written meanwhile. A constraint an operator added beforehand is used as
-- it is. Runs with search_path = the service's schema; a database without these tables (a first start) has nothing to
-- prove.
do $$
declare
  v_bound timestamptz := (date_trunc('month', now() at time zone 'UTC') + interval '2 months') at time zone 'UTC';
  t record;
begin
  for t in
    select v.name, v.col
    from (values ('entitlement_audit', 'occurred_at'), ('point_transactions', 'created_at'),
                 ('point_audit', 'occurred_at')) as v(name, col)
    join pg_class c on c.oid = to_regclass(v.name) and c.relkind = 'r'
    where not exists (select from pg_constraint k where k.conrelid = c.oid and k.conname = v.name || '_before_partitioning')
  loop
    begin
      perform set_config('lock_timeout', '2s', true);
      execute format('alter table %I add constraint %I check (%I < %L) not valid',
                     t.name, t.name || '_before_partitioning', t.col, v_bound);
    exception when lock_not_available then
      raise warning 'could not lock % within 2s: migration 011 will validate its rows under its own lock', t.name;
    end;
  end loop;
end $$;
-- next transaction
do $$
declare
  t record;
begin
  for t in
    select k.conrelid::regclass::text as tbl, k.conname
    from pg_constraint k join pg_class c on c.oid = k.conrelid and c.relkind = 'r'
    where k.conname in ('entitlement_audit_before_partitioning', 'point_transactions_before_partitioning',
                        'point_audit_before_partitioning')
      and c.relnamespace = (select n.oid from pg_namespace n where n.nspname = current_schema())
      and not k.convalidated
  loop
    execute format('alter table %s validate constraint %I', t.tbl, t.conname);
  end loop;
end $$;
