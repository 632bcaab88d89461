-- One batch of consumed events stored in one statement, its own transaction: the events marked processed and, for
-- those that were new only, every notification they yield, numbered per player. An event counts as processed exactly
-- when its notifications exist; a duplicate is skipped, never an error.
--
-- Without a lock holder (p_locked_by null) the notifications are stored PENDING and due at once, for any delivery
-- worker to claim. With one, they are stored PROCESSING, leased to it until p_lease_until with their first attempt
-- counted, and their ids come back: the storing process's own delivery worker sends them without a claim (a statement
-- and a row version less for each). If that process dies first, another worker claims them when the lease ends, as any
-- claimed notification (docs/decisions.md ADR-38).
--
-- The rows to store are chosen before they are numbered (a row that exists already is left out, so skipping it leaves
-- no gap in its player's seq); then each player's counter row moves on by that player's count in one upsert, players
-- in user_id order so that two batches never wait for each other's counters in a cycle, and each row takes its number
-- in the batch's order. The send API numbers its rows the same way (src/notification/intake/consumer/seqs.ts).
--
-- Why a function: its statement keeps one generic plan per connection (plan_cache_mode below). Sent as a prepared
-- statement, PostgreSQL planned it anew at every batch (a few rows in each array make every custom plan look cheaper),
-- or, when the table was nearly empty at its sixth run, kept a generic plan that found existing rows by hashing the
-- whole of `notifications`, once per batch, until the table was analyzed. The existing-row check is a subquery the
-- planner cannot turn into that join (`offset 0`): one probe of notifications_event_user_key per row, whatever the
-- table's statistics say. docs/benchmarks.md, "Notification's storing statement".
create or replace function store_notifications_leased(
  p_now timestamptz,
  p_event_ids uuid[],
  -- One element per notification, in the batch's order: its event, its player, and what it says.
  p_row_event_ids uuid[],
  p_user_ids text[],
  p_types text[],
  p_occurred_at text[],
  p_payloads text[],
  p_traceparents text[],
  p_locked_by text,
  p_lease_until timestamptz,
  out stored_events int,
  out stored_notifications int,
  -- The leased notifications (null without a lock holder), each by its id, its event and its player.
  out leased_ids uuid[],
  out leased_event_ids uuid[],
  out leased_user_ids text[]
) language plpgsql volatile set plan_cache_mode = force_generic_plan as $$
begin
  with fresh as (
    insert into processed_events (event_id, processed_at)
    select id, p_now from unnest(p_event_ids) as t(id)
    on conflict do nothing
    returning event_id
  ), todo as materialized (
    select e.*
    from unnest(p_row_event_ids, p_user_ids, p_types, p_occurred_at, p_payloads, p_traceparents)
      with ordinality as e(event_id, user_id, type, occurred_at, payload, traceparent, ord)
    where e.event_id in (select event_id from fresh)
      and not exists (select from notifications n where n.event_id = e.event_id and n.user_id = e.user_id offset 0)
  ), counters as (
    insert into notification_user_seqs as s (user_id, last_seq)
    select user_id, count(*) from todo group by user_id order by user_id
    on conflict (user_id) do update set last_seq = s.last_seq + excluded.last_seq
    returning s.user_id, s.last_seq
  ), created as (
    insert into notifications
      (notification_id, event_id, user_id, type, occurred_at, payload_json, status, attempt_count, next_retry_at,
       created_at, traceparent, seq, locked_by, locked_at, lease_until)
    select gen_random_uuid(), t.event_id, t.user_id, t.type, t.occurred_at::timestamptz, t.payload::jsonb,
           case when p_locked_by is null then 'PENDING' else 'PROCESSING' end,
           case when p_locked_by is null then 0 else 1 end,
           case when p_locked_by is null then p_now end, p_now, t.traceparent,
           c.last_seq - count(*) over mine + row_number() over (mine order by t.ord),
           p_locked_by, case when p_locked_by is not null then p_now end, p_lease_until
    from todo t join counters c using (user_id)
    window mine as (partition by t.user_id)
    order by t.user_id, t.ord
    on conflict (event_id, user_id) do nothing
    returning notification_id, event_id, user_id
  )
  select (select count(*) from fresh)::int, n.count::int, n.ids, n.event_ids, n.user_ids
  into stored_events, stored_notifications, leased_ids, leased_event_ids, leased_user_ids
  from (
    select count(*), array_agg(notification_id) as ids, array_agg(event_id) as event_ids, array_agg(user_id) as user_ids
    from created
  ) n;
  if p_locked_by is null then
    leased_ids := null;
    leased_event_ids := null;
    leased_user_ids := null;
  end if;
end
$$;
