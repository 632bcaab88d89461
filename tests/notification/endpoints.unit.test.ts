import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { Webhook } from "standardwebhooks";
import { loadNotificationConfig } from "../../src/notification/config.ts";
import { createSecretBox, newSigningSecret } from "../../src/notification/features/endpoints/secrets.ts";
import { parseSecretKey } from "../../src/notification/features/endpoints/settings.ts";
import {
  type Address,
  allowedAddresses,
  cachingResolve,
  isForbiddenAddress,
  parseEndpointUrl,
} from "../../src/notification/features/endpoints/url-guard.ts";
import { signingKey, signWith } from "../../src/notification/work/channels/webhook.ts";
import { createSigner } from "../../src/notification/work/endpoints/signing.ts";
import type { ConfigError } from "../../src/shared/config.ts";

const KEY = Buffer.alloc(32, 7);

describe("sealed endpoint secrets", () => {
  test("open gives back what seal sealed; the sealed text does not contain the secret", () => {
    const box = createSecretBox(KEY);
    const secret = newSigningSecret();
    const sealed = box.seal("e1", secret);
    expect(sealed).not.toContain(secret.slice(6));
    expect(box.open("e1", sealed)).toBe(secret);
  });

  test("a sealed secret moved to another endpoint, or opened with another key, does not open", () => {
    const sealed = createSecretBox(KEY).seal("e1", newSigningSecret());
    expect(() => createSecretBox(KEY).open("e2", sealed)).toThrow();
    expect(() => createSecretBox(Buffer.alloc(32, 8)).open("e1", sealed)).toThrow(/another key/);
  });

  test("a previous key still opens what it sealed; sealing uses the current key", () => {
    const old = Buffer.alloc(32, 3);
    const sealedBefore = createSecretBox(old).seal("e1", "whsec_before");
    const box = createSecretBox(KEY, [old]);
    expect(box.open("e1", sealedBefore)).toBe("whsec_before");
    expect(box.isCurrent(sealedBefore)).toBe(false);
    expect(box.isCurrent(box.seal("e1", "whsec_after"))).toBe(true);
  });

  test("keys are 64 hex characters or base64 of 32 bytes", () => {
    expect(parseSecretKey("ab".repeat(32))?.length).toBe(32);
    expect(parseSecretKey(KEY.toString("base64"))?.length).toBe(32);
    expect(parseSecretKey("short")).toBeUndefined();
  });
});

describe("the SSRF guard", () => {
  test.each([
    "127.0.0.1",
    "127.8.9.10",
    "10.1.2.3",
    "172.16.0.1",
    "192.168.1.1",
    "169.254.169.254",
    "0.0.0.0",
    "100.64.0.1",
    "::1",
    "::",
    "fe80::1",
    "fd00::1",
    "::ffff:127.0.0.1",
    "::ffff:8.8.8.8",
    "224.0.0.1",
  ])("refuses %s", (address) => {
    expect(isForbiddenAddress(address)).toBe(true);
  });

  test.each(["8.8.8.8", "93.184.216.34", "2606:4700:4700::1111"])("allows %s", (address) => {
    expect(isForbiddenAddress(address)).toBe(false);
  });

  test("URLs are http or https without user info", () => {
    expect(() => parseEndpointUrl("ftp://example.com/")).toThrow(
      expect.objectContaining({ code: "ENDPOINT_URL_NOT_ALLOWED" }),
    );
    expect(() => parseEndpointUrl("https://user:pw@example.com/")).toThrow(
      expect.objectContaining({ code: "ENDPOINT_URL_NOT_ALLOWED" }),
    );
    expect(() => parseEndpointUrl("example.com")).toThrow(expect.objectContaining({ code: "BAD_REQUEST" }));
    expect(parseEndpointUrl("https://example.com/hook").hostname).toBe("example.com");
  });

  test("a host resolving to a private address, or to one among public ones, is refused unless private is allowed", async () => {
    const resolve = async () => [
      { address: "93.184.216.34", family: 4 as const },
      { address: "10.0.0.5", family: 4 as const },
    ];
    const url = new URL("https://mixed.example/hook");
    await expect(allowedAddresses(url, { allowPrivate: false, resolve })).rejects.toMatchObject({
      code: "ENDPOINT_URL_NOT_ALLOWED",
    });
    expect(await allowedAddresses(url, { allowPrivate: true, resolve })).toHaveLength(2);
    await expect(allowedAddresses(new URL("http://[::ffff:7f00:1]/"), { allowPrivate: false })).rejects.toMatchObject({
      code: "ENDPOINT_URL_NOT_ALLOWED",
    });
  });
});

describe("the delivery worker's resolver cache", () => {
  test("an answer is kept for its ttl and checked at every use; after it, and after a failure, the name is resolved again", async () => {
    let clock = 0;
    let answer: Address[] | Error = [{ address: "93.184.216.34", family: 4 }];
    let calls = 0;
    const resolve = cachingResolve(
      async () => {
        calls++;
        if (answer instanceof Error) throw answer;
        return answer;
      },
      1_000,
      () => clock,
    );
    const url = parseEndpointUrl("https://rebinding.example/hook");
    const check = () => allowedAddresses(url, { allowPrivate: false, resolve });
    expect(await check()).toEqual([{ address: "93.184.216.34", family: 4 }]);
    answer = [{ address: "127.0.0.1", family: 4 }];
    clock = 999;
    expect(await check(), "within the ttl: the kept answer").toEqual([{ address: "93.184.216.34", family: 4 }]);
    expect(calls).toBe(1);
    clock = 1_000;
    await expect(check(), "after it: resolved again, and the new answer is checked").rejects.toThrow("may not reach");
    clock = 1_500;
    await expect(check(), "a kept forbidden answer is refused at every use").rejects.toThrow("may not reach");
    expect(calls).toBe(2);
    answer = new Error("SERVFAIL");
    clock = 2_000;
    await expect(check()).rejects.toThrow("does not resolve");
    answer = [{ address: "93.184.216.35", family: 4 }];
    expect(await check(), "a failure is not kept").toEqual([{ address: "93.184.216.35", family: 4 }]);
    expect(calls).toBe(4);
  });
});

describe("endpoint configuration", () => {
  const problems = (env: Record<string, string>) => {
    try {
      loadNotificationConfig(env);
      return [];
    } catch (error) {
      return (error as ConfigError).problems;
    }
  };

  test("a bad token entry is reported under NOTIFICATION_AUTH_TOKENS; tokens need the secret key", () => {
    expect(problems({ NOTIFICATION_AUTH_TOKENS: "admin:nothex:read" }).join("\n")).toContain(
      "NOTIFICATION_AUTH_TOKENS entry 1 (admin)",
    );
    const line = `admin:${"a".repeat(64)}:read+write`;
    expect(problems({ NOTIFICATION_AUTH_TOKENS: line }).join("\n")).toContain(
      "NOTIFICATION_ENDPOINT_SECRET_KEY must be set",
    );
    expect(problems({ NOTIFICATION_AUTH_TOKENS: line, NOTIFICATION_ENDPOINT_SECRET_KEY: "ab".repeat(32) })).toEqual([]);
    expect(problems({ NOTIFICATION_ENDPOINT_SECRET_KEY: "too-short" }).join("\n")).toContain("32 bytes");
  });

  test("auto-disable defaults to 5 days; endpoints retry 15 times, backing off up to an hour", () => {
    const endpoints = loadNotificationConfig({}).endpoints;
    expect(endpoints.disableAfterMs).toBe(5 * 86_400_000);
    expect(endpoints.maxAttempts).toBe(15);
    expect(endpoints.backoff).toMatchObject({ baseMs: 1_000, maxMs: 3_600_000, minMs: 1_000 });
    expect(problems({ NOTIFICATION_ENDPOINT_BACKOFF_MIN: "2h" }).join("\n")).toContain(
      "NOTIFICATION_ENDPOINT_BACKOFF_MIN",
    );
  });
});

describe("endpoint signatures", () => {
  const at = new Date("2026-11-27T10:00:00.750Z");
  const body = JSON.stringify({ notification_id: "n1", payload: { sku: "sku_ü", n: 1 } });

  test("node:crypto's HMAC gives the standardwebhooks package's signature, which its verifier accepts", () => {
    for (const secret of [newSigningSecret(), newSigningSecret()]) {
      const signature = signWith(signingKey(secret), "msg_1", at, body);
      expect(signature).toBe(new Webhook(secret).sign("msg_1", at, body));
      const now = new Date();
      const headers = {
        "webhook-id": "msg_1",
        "webhook-timestamp": String(Math.floor(now.getTime() / 1000)),
        "webhook-signature": signWith(signingKey(secret), "msg_1", now, body),
      };
      expect(() => new Webhook(secret).verify(body, headers)).not.toThrow();
    }
  });

  test("one signer: the channel and the endpoints make their webhook-signature with one function, and no other file signs", () => {
    const root = resolve(import.meta.dir, "../..");
    const signers = [...new Bun.Glob("src/notification/**/*.ts").scanSync(root)]
      .filter((file) => /\bcreateHmac\(|from "standardwebhooks"/.test(readFileSync(join(root, file), "utf8")))
      .sort();
    expect(signers, "two ways of signing can drift apart; both deliveries sign with signWith").toEqual([
      "src/notification/work/channels/webhook.ts",
    ]);
  });

  test("during a rotation's overlap the header carries the new signature, then the previous one; after it only the new", () => {
    const box = createSecretBox(KEY);
    const [current, previous] = [newSigningSecret(), newSigningSecret()];
    const secrets = {
      endpointId: "e1",
      secretCiphertext: box.seal("e1", current),
      previousSecretCiphertext: box.seal("e1", previous),
      previousSecretUntil: new Date(at.getTime() + 1_000),
      olderSecrets: [],
    };
    const sign = createSigner(box);
    const expected = [current, previous].map((s) => new Webhook(s).sign("msg_1", at, body));
    expect(sign(secrets, "msg_1", at, body)).toBe(expected.join(" "));
    expect(sign(secrets, "msg_1", new Date(at.getTime() + 1_000), body)).toBe(
      new Webhook(current).sign("msg_1", new Date(at.getTime() + 1_000), body),
    );
  });
});
