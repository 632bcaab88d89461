-- Least privilege (ADR-23, docs/security.md "PostgreSQL roles"): the NOLOGIN group role notification_runtime
-- holds DML on this schema's tables, those that exist and every one a later migration creates; an operator's runtime
-- login role is made a member of it and gets nothing else. Runs with search_path = notification, as the role that
-- migrates (the schema's owner), whose default privileges these are: migrate always as that same role.

-- The group role belongs to the cluster, not to the database. Created here when the migrating role may (a superuser,
-- or CREATEROLE); a plain schema owner needs a DBA to have created it first, and is told so.
do $$
begin
  if not exists (select from pg_roles where rolname = 'notification_runtime') then
    create role notification_runtime nologin;
  end if;
exception
  when insufficient_privilege then
    raise exception 'role notification_runtime does not exist and % may not create it', current_user
      using errcode = 'insufficient_privilege',
        hint = 'As a superuser or a CREATEROLE role, run: create role notification_runtime nologin; then migrate '
          'again (docs/security.md).';
  when duplicate_object or unique_violation then
    null; -- another database of the cluster created it at the same moment
end
$$;

grant usage on schema notification to notification_runtime;
grant select, insert, update, delete on all tables in schema notification to notification_runtime;
grant usage, select on all sequences in schema notification to notification_runtime;
-- The migration history is the migrating role's alone.
revoke insert, update, delete on schema_migrations from notification_runtime;
alter default privileges in schema notification
  grant select, insert, update, delete on tables to notification_runtime;
alter default privileges in schema notification
  grant usage, select on sequences to notification_runtime;
