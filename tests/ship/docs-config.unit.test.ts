// docs/configuration.md is generated from the configuration schemas: this fails when someone changes a variable, its
// default or its meaning without regenerating the page (`bun run docs:config`).
import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { EntitlementEnv } from "../../src/entitlement/config.ts";
import { NotificationEnv } from "../../src/notification/config.ts";
import { CONFIGURATION_DOC, renderConfigurationDoc } from "../../tools/docs-config.ts";

test("docs/configuration.md is what the generator writes from the schemas", () => {
  expect(readFileSync(CONFIGURATION_DOC, "utf8"), "run `bun run docs:config` and commit the result").toBe(
    renderConfigurationDoc(),
  );
});

test("every variable of both schemas is documented", () => {
  const doc = readFileSync(CONFIGURATION_DOC, "utf8");
  const names = [...Object.keys(EntitlementEnv.properties), ...Object.keys(NotificationEnv.properties)];
  expect(names.filter((n) => !new RegExp(`^\\| \`${n}\` +\\|`, "m").test(doc))).toEqual([]);
});
