-- This number belongs to a change developed beside the webhook endpoints; an empty migration keeps the numbering
-- without gaps on this line of work.
select 1;
