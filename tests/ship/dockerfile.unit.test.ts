// Each service image exposes its own port, the service's default PORT, and nothing else; both are otherwise the same
// FROM scratch runtime (the Dockerfile's last stage is `service-${SERVICE}`, built FROM that runtime stage).
import { expect, test } from "bun:test";
import { resolve } from "node:path";
import { EntitlementEnv } from "../../src/entitlement/config.ts";
import { NotificationEnv } from "../../src/notification/config.ts";
import { readFinalStage } from "./dockerfile.ts";

const repoRoot = resolve(import.meta.dir, "../..");
const ports = {
  entitlement: String(EntitlementEnv.properties.PORT.default),
  notification: String(NotificationEnv.properties.PORT.default),
};

test("each image exposes exactly its own service's default port", () => {
  for (const [service, port] of Object.entries(ports)) {
    expect(readFinalStage(repoRoot, { SERVICE: service }).expose, service).toEqual([port]);
  }
  expect(ports.entitlement).not.toBe(ports.notification);
});

test("without SERVICE the image is Entitlement's; apart from EXPOSE both are the same scratch runtime", () => {
  const { expose: defaultExpose, ...byDefault } = readFinalStage(repoRoot, {});
  const { expose: _e, ...entitlement } = readFinalStage(repoRoot, { SERVICE: "entitlement" });
  const { expose: _n, ...notification } = readFinalStage(repoRoot, { SERVICE: "notification" });
  expect(defaultExpose).toEqual([ports.entitlement]);
  expect(byDefault).toEqual(entitlement);
  expect(notification).toEqual(entitlement);
  expect(entitlement.base).toBe("scratch");
});
