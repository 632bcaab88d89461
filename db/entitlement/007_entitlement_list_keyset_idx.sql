-- The entitlement list is paged by keyset (newest first, the SKU breaking ties): this index serves both the order and
-- the "after the cursor" bound, so a page costs its own rows whatever the user's total. It replaces the index on
-- (user_id, updated_at desc), of which it is an extension.
create index entitlements_user_updated_sku_idx on entitlements (user_id, updated_at desc, stock_keeping_unit);
drop index entitlements_user_updated_idx;
