import { expect, test } from "bun:test";
import { benchDeviations, describeBenchPostgres } from "./bench-postgres.ts";
import { parseBenchOptions } from "./options.ts";

test("the bench's own cluster keeps the stock settings unless pgbench's clients and the pools need more connections", () => {
  expect(benchDeviations({ connections: [4], poolMax: 10 }), "a small run fits in the stock 100").toEqual([]);
  const [deviation, ...more] = benchDeviations({ connections: [16, 64], poolMax: 10 });
  expect(more).toEqual([]);
  expect(deviation?.name).toBe("max_connections");
  expect(Number(deviation?.value), "64 clients + 2 × (10 + 2) + 20 spare = 108, rounded up").toBe(110);
  expect(Number(benchDeviations({ connections: [128], poolMax: 20 })[0]?.value)).toBe(200);
  const line = describeBenchPostgres({ cluster: "own", deviations: [deviation ?? { name: "", value: "", why: "" }] });
  expect(line, "each deviation is printed with its reason").toContain("max_connections=110 (pgbench's 64 clients");
  expect(describeBenchPostgres({ cluster: "own", deviations: [] })).toEndWith("stock settings");
});

test("DATABASE_URL's server is used only when asked for", () => {
  expect(parseBenchOptions([]).useDatabaseUrl).toBe(false);
  expect(parseBenchOptions(["--quick", "--use-database-url"]).useDatabaseUrl).toBe(true);
});
