-- A balance leaves the service as a JSON number (the points reply, the PointsGranted event's balance_after), exact only
-- up to 2^53 - 1. New reservations past it are refused by the API (POINTS_BALANCE_LIMIT); this check makes an execution
-- that would still pass it fail, so the reservation ends FAILED with nothing granted and no event. NOT VALID: rows
-- already there are not scanned (none can be past it unless written by hand); every insert and update is checked.
alter table point_balances
  add constraint point_balances_balance_cap check (balance <= 9007199254740991) not valid;
