// Every 400 for input a route's schema refused names the field and the rule it broke (valid values listed for a set of
// literals), in the {code, message} envelope, and never echoes the value that was sent: a refused field may hold a
// secret. Through the webhook endpoints admin API, whose bodies Elysia checks against their schemas.
import { describe, expect, test } from "bun:test";
import { NOTIFICATION_TYPES } from "../../src/notification/intake/consumer/handler.ts";
import { useTestDatabase } from "../support/infra.ts";
import { endpointApp } from "./endpoints.helpers.ts";

const f = useTestDatabase("notif_validation_message", { service: "notification" });
const URL = "http://127.0.0.1:9/hook";

async function refusal(method: string, path: string, body: unknown): Promise<string> {
  const answer = await endpointApp(f.sql).call(method, path, body);
  expect(answer.status, `${method} ${path} ${JSON.stringify(body).slice(0, 60)} is refused`).toBe(400);
  expect(Object.keys(answer.body), "the envelope is exactly {code, message}").toEqual(["code", "message"]);
  expect(answer.body.code).toBe("BAD_REQUEST");
  return answer.body.message as string;
}

describe("a refused body names the field and the rule", () => {
  test("a missing field, a wrong type, a too long text", async () => {
    const missing = await refusal("POST", "/v1/webhook-endpoints", { description: "no url" });
    expect(missing).toBe("body.url: is required (a string of 1 to 2048 characters)");
    const bool = await refusal("POST", "/v1/webhook-endpoints", { url: URL, enabled: "yes" });
    expect(bool).toBe("body.enabled: must be true or false");
    const long = await refusal("POST", "/v1/webhook-endpoints", { url: URL, description: "d".repeat(501) });
    expect(long).toBe("body.description: must be a string of at most 500 characters");
  });

  test("event_types of the wrong shape lists every valid type", async () => {
    const message = await refusal("POST", "/v1/webhook-endpoints", { url: URL, event_types: "EntitlementGranted" });
    expect(message).toStartWith("body.event_types: must be an array of 1 to 100 items (each ");
    expect(message, "and says the rule of a sender's own types").toContain("a string matching ^[A-Za-z]");
    expect(message).toEndWith(") or null");
    for (const type of NOTIFICATION_TYPES) expect(message, `lists ${type}`).toContain(type);
  });

  test("on the other routes of the API too: rotate and replay", async () => {
    const created = await endpointApp(f.sql).call("POST", "/v1/webhook-endpoints", { url: URL });
    const id = created.body.endpoint_id as string;
    const rotate = await refusal("POST", `/v1/webhook-endpoints/${id}/secret/rotate`, { overlap: 60 });
    expect(rotate).toBe("body.overlap: must be a string");
    const replay = await refusal("POST", `/v1/webhook-endpoints/${id}/replay`, { only_failed: true });
    expect(replay).toBe("body.since: is required (a string)");
    const flag = await refusal("POST", `/v1/webhook-endpoints/${id}/replay`, { since: "x", only_failed: "no" });
    expect(flag).toBe("body.only_failed: must be true or false");
  });

  test("the value sent is never part of the message", async () => {
    const secret = "sk_live_0123456789abcdef";
    for (const body of [
      { url: { token: secret } },
      { url: URL, description: [secret] },
      { url: URL, enabled: secret },
      { url: URL, event_types: secret },
    ]) {
      const message = await refusal("POST", "/v1/webhook-endpoints", body);
      expect(message, `${JSON.stringify(body)}: no echo`).not.toContain(secret);
      expect(message).toMatch(/^body\.[a-z_]+: /);
    }
  });
});
