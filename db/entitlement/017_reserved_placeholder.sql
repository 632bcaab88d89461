-- A stand-in: the number 017 belongs to a change developed beside this one, and this file gives way to it when
-- both meet. It does nothing.
select 1;
