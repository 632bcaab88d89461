// The VAPID private key is one of Notification's secret variables: a configuration object that carries it is logged
// with the value redacted, as the other secrets are.
import { expect, test } from "bun:test";
import { SECRET_VARIABLES } from "../../src/notification/config.ts";
import { createLogger } from "../../src/shared/logger.ts";

test("the VAPID private key never reaches a log line", () => {
  const lines: string[] = [];
  const log = createLogger({
    level: "info",
    service: "push-secret-test",
    secretKeys: SECRET_VARIABLES,
    destination: { write: (l: string) => lines.push(l) },
  });
  const key = "vapid-private-key-that-must-never-be-logged";
  log.info(
    { env: { NOTIFICATION_WEBPUSH_VAPID_PRIVATE_KEY: key, NOTIFICATION_WEBPUSH_SUBJECT: "mailto:ops@example.com" } },
    "configuration",
  );
  expect(lines.join("")).toContain("NOTIFICATION_WEBPUSH_VAPID_PRIVATE_KEY");
  expect(lines.join("")).not.toContain(key);
});
