-- An instant as the API writes it (JavaScript's toISOString): UTC, milliseconds, "Z".
create or replace function api_instant(p_at timestamptz) returns text language sql immutable as $$
  select to_char(p_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
$$;
