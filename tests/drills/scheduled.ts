// The scheduler's work in the drill's load, beside the grants: bundles whose items expire (expiring.ts) and point
// reservations (points-load.ts), each under a prefix of its own (not under the grants' prefix, so each is checked by
// its own model). Started with the load, stopped with it, checked after the grants' ledger.
import { checkExpiringLoad, startExpiringLoad } from "./expiring.ts";
import { checkPoints, type PointsReport } from "./points-ledger.ts";
import { startPointsLoad } from "./points-load.ts";

type Options = { prefix: string; urls: () => string[]; token: string; random: () => number };

export type ScheduledReport = {
  events: number;
  notifications: number;
  lost: number;
  duplicated: number;
  problems: string[];
  points: PointsReport;
};

export function startScheduledLoad(o: Options) {
  const expiringPrefix = `x${o.prefix}`;
  const pointsPrefix = `p${o.prefix}`;
  const expiring = startExpiringLoad({ ...o, prefix: expiringPrefix, pauseMs: 150 });
  const points = startPointsLoad({ ...o, prefix: pointsPrefix, pauseMs: 100 });
  return {
    count: () => `${expiring.bundles.length} expiring bundles and ${points.reservations.length} point reservations`,
    stop: () => Promise.all([expiring.stop(), points.stop()]),
    /** Settles both loads by replay, waits for their execution, then checks them; `urls` are the live replicas. */
    check: async (
      sql: Parameters<typeof checkPoints>[0],
      c: { urls: () => string[]; timeoutMs: number; latencyBoundMs: number; log: (line: string) => void },
    ): Promise<ScheduledReport> => {
      const settle = { urls: c.urls, token: o.token, timeoutMs: c.timeoutMs };
      const x = await checkExpiringLoad(sql, expiring, { ...settle, prefix: expiringPrefix });
      c.log(`  checked: ${x.bundles} bundles accepted, ${x.items} items granted and expired once each`);
      const p = await checkPoints(sql, points, { ...settle, prefix: pointsPrefix, latencyBoundMs: c.latencyBoundMs });
      c.log(
        `  checked: ${p.reservations} reservations accepted (${p.settled} settled by replay, ${p.replays} replays), ` +
          `${p.done} DONE, ${p.transactions} transactions, ` +
          `${p.notifications} PointsGranted, ${p.exactBalances}/${p.users} balances exact`,
      );
      return {
        events: x.events,
        notifications: x.notifications,
        lost: x.lost + p.lost,
        duplicated: x.duplicated + p.duplicated,
        problems: [...x.problems, ...p.problems],
        points: p,
      };
    },
  };
}
