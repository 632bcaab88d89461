-- One event may yield several notifications (a matchmaking event notifies each matched player), but never two for the
-- same user: that is now the database's rule too, not only processed_events'. The unique index leads with event_id,
-- so it also serves every lookup the plain event_id index served, which it replaces.
create unique index notifications_event_user_key on notifications (event_id, user_id);
drop index notifications_event_idx;
