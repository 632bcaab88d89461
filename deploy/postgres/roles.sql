-- compose.yml's PostgreSQL roles: its one-shot `postgres-roles` service runs this file as the superuser at every `up`
-- (`psql --single-transaction --set=ON_ERROR_STOP=1`, before either service starts). Between \if and \endif: the
-- DBA's SQL of docs/security.md ("PostgreSQL roles") for the database `app`, word for word but for the passwords (a
-- unit test compares them), run on the first `up` only.
--
-- DEMO PASSWORDS for a laptop, as compose.yml's other secrets: anywhere else, choose your own.
select not exists (select from pg_roles where rolname = 'entitlement_app') as first_up \gset
\if :first_up
-- Once per cluster: the group roles (ADR-23). Skip them when they exist already.
create role entitlement_runtime nologin;
create role notification_runtime nologin;
-- Per service: an owner that migrates, and a runtime login that is a member of its group and nothing else.
create role entitlement_owner login password 'demo-entitlement-owner-change-me';
create role entitlement_app login password 'demo-entitlement-app-change-me' in role entitlement_runtime;
create role notification_owner login password 'demo-notification-owner-change-me';
create role notification_app login password 'demo-notification-app-change-me' in role notification_runtime;
-- Only these roles connect (the group roles are cluster-wide: CONNECT keeps two deployments in one cluster apart).
revoke all on database app from public;
grant connect on database app to entitlement_owner, entitlement_app, notification_owner, notification_app;
-- Each owner creates its schema at its first migration, and so owns it.
grant create on database app to entitlement_owner, notification_owner;
\endif
