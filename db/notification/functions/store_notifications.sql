-- The storing statement of the release before: the same as store_notifications_leased without a lock holder, its
-- notifications PENDING and due at once. Kept for that release's consumers while a rolling upgrade runs (they call it
-- by name with these arguments); this release calls store_notifications_leased.
create or replace function store_notifications(
  p_now timestamptz,
  p_event_ids uuid[],
  p_row_event_ids uuid[],
  p_user_ids text[],
  p_types text[],
  p_occurred_at text[],
  p_payloads text[],
  p_traceparents text[],
  out stored_events int,
  out stored_notifications int
) language plpgsql volatile as $$
begin
  select s.stored_events, s.stored_notifications into stored_events, stored_notifications
  from store_notifications_leased(p_now, p_event_ids, p_row_event_ids, p_user_ids, p_types, p_occurred_at, p_payloads,
                                  p_traceparents, null, null) s;
end
$$;
