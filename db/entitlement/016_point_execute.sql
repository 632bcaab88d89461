-- The execution of a claimed point reservation became a function of the schema, point_execute, so that every row of
-- the outbox, the point ledger and the point audit is written by SQL functions of the database and nowhere else. Its
-- text now lives in db/entitlement/functions/point_execute.sql, applied after the numbered migrations.
select 1;
