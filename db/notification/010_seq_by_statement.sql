-- The consumer numbers the notifications it stores itself, one counter update per user and batch in its storing
-- statement, instead of the per-row trigger calling a function for each row: the trigger was the largest single cost of
-- storing a notification (docs/benchmarks.md "Notification's storing statement"). The trigger stays, for every insert
-- that does not say its seq: the previous release's consumer during a rolling upgrade, runbooks, operator scripts. Both
-- take the same counter row, so the numbering stays one sequence per user, in commit order, without a gap.
drop trigger notifications_seq on notifications;
create trigger notifications_seq before insert on notifications
  for each row when (new.seq is null) execute function notification_next_seq();

-- notifications_user_idx (user_id, created_at) served the debug inbox and the console's list, which now read a user's
-- notifications by seq (notifications_user_seq_key, the same user's rows in the order they were stored). Every
-- version of a notification (stored, claimed, sent) added an entry to it; the previous release's queries of one user's
-- rows use the seq index as well.
drop index notifications_user_idx;
