-- The execution of a claimed point reservation becomes a function of the schema, beside entitlement_change and
-- point_command, so that every row of the outbox, the point ledger and the point audit is written by SQL functions
-- of the database and nowhere else. One statement, hence one transaction with the caller's: the reservation DONE
-- (guarded by locked_by and PROCESSING; when the guard fails nothing else happens), the ledger row unless the
-- reservation already has one (the last line of defence against a double grant: the ledger is partitioned by month,
-- so no unique index spans it; two executions of one reservation are serialized by the reservation's row lock, and
-- the later one finds it DONE), and only when that row is new the balance, the audit row and the PointsGranted outbox
-- event, whose payload gets balance_after from the balance the statement produced.
-- finalized 0: the lease was lost; granted 0: the reservation had been granted before.
create function point_execute(
  p_reservation_id uuid,
  p_locked_by text,
  p_transaction_id uuid,
  p_event_id uuid,
  p_now timestamptz,
  p_subject text,
  p_payload jsonb                    -- PointsGranted without balance_after
) returns table (finalized int, granted int, balance_after bigint)
language sql volatile as $$
  with done as (
    update point_reservations
    set status = 'DONE', executed_at = p_now, updated_at = p_now, locked_by = null, locked_at = null,
        last_error = null,
        transaction_id = coalesce(
          (select transaction_id from point_transactions where reservation_id = p_reservation_id), p_transaction_id)
    where reservation_id = p_reservation_id and locked_by = p_locked_by and status = 'PROCESSING'
    returning reservation_id, user_id, point_amount, reason, trace_id
  ), ledger as (
    insert into point_transactions (transaction_id, reservation_id, user_id, point_amount, reason, created_at)
    select p_transaction_id, reservation_id, user_id, point_amount, reason, p_now from done
    where not exists (select from point_transactions t where t.reservation_id = done.reservation_id)
    returning transaction_id, reservation_id, user_id, point_amount
  ), balance as (
    insert into point_balances as b (user_id, balance, updated_at)
    select user_id, point_amount, p_now from ledger
    on conflict (user_id) do update set balance = b.balance + excluded.balance, updated_at = excluded.updated_at
    returning user_id, balance
  ), audit as (
    insert into point_audit (audit_id, occurred_at, reservation_id, user_id, action, trace_id, detail)
    select gen_random_uuid(), p_now, ledger.reservation_id, ledger.user_id, 'EXECUTE', done.trace_id,
           jsonb_build_object('transaction_id', ledger.transaction_id, 'balance_after', balance.balance)
    from ledger join done on done.reservation_id = ledger.reservation_id
    join balance on balance.user_id = ledger.user_id
  ), outbox as (
    insert into outbox_events (event_id, event_type, aggregate_key, payload, status, attempt_count, created_at, subject)
    select p_event_id, 'PointsGranted', ledger.user_id, p_payload || jsonb_build_object('balance_after', balance.balance),
           'PENDING', 0, p_now, p_subject
    from ledger join balance on balance.user_id = ledger.user_id
  )
  select (select count(*) from done)::int, (select count(*) from ledger)::int, (select balance from balance)
$$;
