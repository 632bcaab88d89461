// How the send API's statement (features/send/queries.ts) numbers notifications per player (seq). The consumer's batch
// is stored by `store_notifications` (db/notification/functions/), which spells the same two pieces in SQL, so both
// move the counters the same way (tests/notification/players/seq-concurrency.int.test.ts stores through both for one
// player and checks one sequence). The statement has a CTE `todo` of the rows to store, each with its `user_id` and
// its place `ord`; `counters` moves each user's counter row on by that user's count in one upsert, in user_id order so
// that two statements never wait for each other's counter rows in a cycle (the rows stay locked until commit, so one
// user's numbers commit in order); `rowSeq` numbers a row of `todo t join counters c using (user_id)` up to its
// user's counter, in `ord` order, over the window `mine as (partition by t.user_id)`.
import type { Db } from "../../../shared/db.ts";

/** The CTE `counters` (user_id, last_seq): every user of `todo`, its counter moved on by its rows in `todo`. */
export const seqCounters = (db: Db) => db`counters as (
      insert into notification_user_seqs as s (user_id, last_seq)
      select user_id, count(*) from todo group by user_id order by user_id
      on conflict (user_id) do update set last_seq = s.last_seq + excluded.last_seq
      returning s.user_id, s.last_seq
    )`;

/** A row's seq, given `t` (todo), `c` (counters) and the window `mine`. */
export const rowSeq = (db: Db) => db`c.last_seq - count(*) over mine + row_number() over (mine order by t.ord)`;
