-- Players read their own notifications (docs/api.md "Players"). Runs with search_path = notification.
--
-- seq numbers one user's notifications 1, 2, 3, ... in the order they commit, with no gap, and is never reused, not
-- even after retention deleted the rows: the next number lives in a counter row per user, which retention never
-- deletes. The row is taken (and locked) by the transaction that stores the notification, so two transactions for
-- the same user commit in seq order, and nothing wider than that one user is ever locked. The trigger numbers every
-- insert, whichever release of the service makes it (rolling upgrades).
create table if not exists notification_user_seqs (
  user_id text primary key,
  last_seq bigint not null
);

-- Added, and the stored rows numbered, by the preparation (db/notification/prepare/); here when it could not.
alter table notifications add column if not exists seq bigint;
alter table notifications add column if not exists read_at timestamptz;

-- The counter table is named with its schema: the trigger also runs for inserts of programs whose search_path does not
-- hold the service's schema (runbooks, tests, operator scripts that name notification.notifications).
create function notification_next_seq() returns trigger language plpgsql volatile security invoker as $$
begin
  insert into notification.notification_user_seqs as s (user_id, last_seq) values (new.user_id, 1)
  on conflict (user_id) do update set last_seq = s.last_seq + 1
  returning s.last_seq into new.seq;
  return new;
end
$$;

-- The rows stored since the preparation (by the release before this one) are numbered after the ones it numbered, in
-- the order they were stored; all of them, when it could not run.
with pending as (
  select notification_id, user_id, created_at from notifications where seq is null
), base as (
  select user_id, max(seq) as last_seq from notifications
  where seq is not null and user_id in (select user_id from pending)
  group by user_id
)
update notifications n set seq = numbered.seq
from (
  select p.notification_id,
         coalesce(b.last_seq, 0) + row_number() over (partition by p.user_id order by p.created_at, p.notification_id) as seq
  from pending p left join base b using (user_id)
) numbered
where n.notification_id = numbered.notification_id;

insert into notification_user_seqs (user_id, last_seq)
select user_id, max(seq) from notifications group by user_id;

alter table notifications alter column seq set not null;

create trigger notifications_seq before insert on notifications
  for each row execute function notification_next_seq();

-- A user's notifications by seq: the inbox (newest first), the stream (after a seq) and the unread filter.
create unique index notifications_user_seq_key on notifications (user_id, seq);
create index notifications_user_unread_idx on notifications (user_id, seq) where read_at is null;

-- Single-use tickets for a browser's EventSource, which cannot send an Authorization header: only the ticket's
-- SHA-256 is stored, and taking a ticket deletes it.
create table player_stream_tickets (
  ticket_digest bytea primary key,
  user_id text not null,
  token_expires_at timestamptz not null,
  expires_at timestamptz not null
);
create index player_stream_tickets_expires_idx on player_stream_tickets (expires_at);
