-- Runs before migration 008's transaction, each part in a transaction of its own, while the release before it may
-- still be storing and delivering notifications: it adds the seq and read_at columns and numbers the rows stored so far,
-- one slice of users per transaction (a user's rows are all in one slice, so each is numbered 1..n in the order stored),
-- so that the migration's own transaction numbers only the rows stored since. Numbering 200,000 rows took 6.1 s of the
-- 7.1 s the migration held its lock without this (the loaded 2-core machine); the counters, NOT NULL and both indexes
-- the rest. Running it again numbers only what is still unnumbered. A database without the table (a first start) has
-- nothing to prepare. Runs with search_path = the service's schema.
do $$
begin
  if to_regclass('notifications') is null then
    return;
  end if;
  -- Adding a column is a catalog change, but it waits for the table's lock behind running writers: bounded, and left
  -- to the migration when it cannot be had.
  perform set_config('lock_timeout', '2s', true);
  alter table notifications add column if not exists seq bigint;
  alter table notifications add column if not exists read_at timestamptz;
exception
  when lock_not_available then
    raise warning 'could not lock notifications within 2s: migration 008 will number its rows under its own lock';
end
$$;
-- next transaction
do $$
declare
  v_slices constant int := 16;
begin
  if not exists (
    select from pg_attribute
    where attrelid = to_regclass('notifications') and attname = 'seq' and not attisdropped
  ) then
    return;
  end if;
  for v_slice in 0 .. v_slices - 1 loop
    -- A deadlock with a delivery worker's update of the same rows costs this slice a retry, not the upgrade.
    loop
      begin
        with pending as (
          select notification_id, user_id, created_at from notifications
          where seq is null and (hashtext(user_id) & (v_slices - 1)) = v_slice
        ), base as (
          select user_id, max(seq) as last_seq from notifications
          where seq is not null and user_id in (select user_id from pending)
          group by user_id
        )
        update notifications n set seq = numbered.seq
        from (
          select p.notification_id,
                 coalesce(b.last_seq, 0)
                   + row_number() over (partition by p.user_id order by p.created_at, p.notification_id) as seq
          from pending p left join base b using (user_id)
        ) numbered
        where n.notification_id = numbered.notification_id;
        exit;
      exception
        when deadlock_detected then
          null;
      end;
    end loop;
    commit;
  end loop;
end
$$;
