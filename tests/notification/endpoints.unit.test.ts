import { describe, expect, test } from "bun:test";
import { loadNotificationConfig } from "../../src/notification/config.ts";
import { createSecretBox, newSigningSecret } from "../../src/notification/outbound/endpoints/secrets.ts";
import { parseSecretKey } from "../../src/notification/outbound/endpoints/settings.ts";
import {
  allowedAddresses,
  isForbiddenAddress,
  parseEndpointUrl,
} from "../../src/notification/outbound/endpoints/url-guard.ts";
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
