-- An extension under its Idempotency-Key, one statement, as entitlement_grant: 'stored', 'past', else the ACTIVE item
-- whose expiry is earlier than p_expires_at gets it ('applied', its expiry rescheduled), or nothing changes and the
-- refusal that fits the row is remembered ('state_conflict'). An entitlement without expiry never expires, so no date
-- is later: it is refused like an earlier one.
create or replace function entitlement_extend(
  p_user_id text,
  p_sku text,
  p_reason text,
  p_purchase_id text,
  p_expires_at timestamptz,          -- the later expiry
  p_now timestamptz,
  p_trace_id text,
  p_traceparent text,
  p_event_type text,
  p_payload jsonb,
  p_detail jsonb,
  p_applied jsonb,                   -- {code, body}: the service's reply of the extension
  p_refused jsonb,                   -- {not_active, no_expiry, not_later}: each a {code, body}; in not_later's
                                     -- message, {expires_at} stands for the current expiry
  p_caller text,
  p_idem_key text,
  p_lock_key bigint,
  p_request_hash text,
  p_record_expires_at timestamptz,
  p_lock_timeout_ms int
) returns table (outcome text, stored_hash text, reply_code int, reply_body jsonb, reply_expires_at timestamptz)
language plpgsql volatile as $$
declare
  v_changed jsonb;
  v_reply jsonb;
begin
  return query select 'stored', o.request_hash, o.response_code, o.response_body, o.expires_at
               from idempotency_open(p_caller, p_idem_key, p_lock_key, p_lock_timeout_ms) o;
  if found then
    return;
  end if;
  if p_expires_at <= p_now then
    return query select 'past', null::text, null::int, null::jsonb, null::timestamptz;
    return;
  end if;
  v_changed := entitlement_set_expiry(p_user_id, p_sku, p_reason, p_purchase_id, p_expires_at, p_now, null);
  if v_changed <> '[]' then
    perform entitlement_record('EXTEND', p_user_id, v_changed, p_now, p_trace_id, p_traceparent, p_event_type,
                               p_payload, p_detail, p_caller, p_idem_key, p_expires_at);
    return query select * from idempotency_answer('applied', entitlement_reply(p_applied, p_user_id, v_changed),
                                                  p_caller, p_idem_key, p_request_hash, p_record_expires_at);
    return;
  end if;
  select case when e.status is distinct from 'ACTIVE' then p_refused -> 'not_active'
              when e.expires_at is null then p_refused -> 'no_expiry'
              else jsonb_set(p_refused -> 'not_later', '{body,message}', to_jsonb(replace(
                     p_refused #>> '{not_later,body,message}', '{expires_at}', api_instant(e.expires_at)))) end
  into v_reply
  from (select) one
  left join entitlements e on e.user_id = p_user_id and e.stock_keeping_unit = p_sku;
  return query select * from idempotency_answer('state_conflict', v_reply, p_caller, p_idem_key, p_request_hash,
                                                p_record_expires_at);
end $$;
