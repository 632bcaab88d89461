// The push bench's stand-in in its counting mode checks what it claims to: a push whose VAPID JWT is signed by a key
// other than its `k`, or is not aes128gcm, is refused (the bench then stops with the stand-in's reason), and a proper
// one from the web-push library is counted with its arrival time.
import { afterAll, beforeAll, expect, test } from "bun:test";
import webpush from "web-push";
import { type Standin, startStandin } from "./push.ts";

let standin: Standin;
beforeAll(async () => {
  standin = await startStandin("count");
});
afterAll(() => standin?.stop());

const subscribe = async () => {
  const response = await fetch(`${standin.control}/subscribe`, { method: "POST", body: JSON.stringify({ n: 1 }) });
  return ((await response.json()) as webpush.PushSubscription[])[0] as webpush.PushSubscription;
};
const stats = async () =>
  (await (await fetch(`${standin.control}/stats`)).json()) as {
    count: number;
    checked: number;
    refused: string[];
    arrivals: number[];
  };
const vapidDetails = { subject: "mailto:bench@example.com", ...webpush.generateVAPIDKeys() };

/** The request web-push would send, with `change` applied to its headers. */
async function push(change: (headers: Record<string, string>) => void = () => {}): Promise<number> {
  const details = webpush.generateRequestDetails(await subscribe(), "{}", { vapidDetails, TTL: 60 });
  const headers = details.headers as Record<string, string>;
  change(headers);
  const response = await fetch(details.endpoint, { method: "POST", headers, body: details.body as Buffer });
  return response.status;
}

test("the sampled push's VAPID JWT is verified: signed under another key than k, it is refused", async () => {
  const other = webpush.generateVAPIDKeys().publicKey;
  // The stand-in verifies the first push and every 100th after it.
  const otherKey = (h: Record<string, string>) => {
    h.Authorization = (h.Authorization as string).replace(/k=\S+$/, `k=${other}`);
  };
  expect(await push(otherKey)).toBe(400);
  expect((await stats()).refused[0]).toContain("signature verification failed");
});

test("a push that is not aes128gcm is refused; a proper one is counted", async () => {
  const aesgcm = (h: Record<string, string>) => {
    h["Content-Encoding"] = "aesgcm";
  };
  expect(await push(aesgcm)).toBe(400);
  expect(await push()).toBe(201);
  const s = await stats();
  expect(s.refused).toContain("Content-Encoding is not aes128gcm");
  expect(s.count).toBe(3);
  expect(s.arrivals.length, "only the accepted push has an arrival").toBe(1);
  expect(Math.abs((s.arrivals[0] as number) - Date.now())).toBeLessThan(5_000);
});
