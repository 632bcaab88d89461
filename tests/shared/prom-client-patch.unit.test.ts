// prom-client is patched (patches/prom-client@15.1.3.patch) to load its push gateway and cluster aggregator on first
// use: the push gateway pulls in node's http, https, url and zlib, which every start paid for and nothing here uses.
// The executable's bundle reads a CommonJS module's exports lazily; Bun's runtime import reads them all at once, so
// this test loads the package with require, as the bundle does.
import { expect, test } from "bun:test";

const loaded = (part: string) => Object.keys(require.cache).some((path) => path.includes(`prom-client/lib/${part}`));

test("loading prom-client loads neither the push gateway nor the cluster aggregator, which still work", () => {
  const prom = require("prom-client") as typeof import("prom-client");
  expect(loaded("registry"), "the module cache is what this test reads").toBe(true);
  expect(loaded("pushgateway"), "the push gateway is not loaded with the package").toBe(false);
  expect(loaded("cluster"), "the cluster aggregator is not loaded with the package").toBe(false);
  expect(typeof prom.Pushgateway, "and is there when asked for").toBe("function");
  expect(loaded("pushgateway")).toBe(true);
  expect(typeof prom.AggregatorRegistry).toBe("function");
});
