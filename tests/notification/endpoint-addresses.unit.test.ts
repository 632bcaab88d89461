// The endpoint guard against every special-purpose block: the IANA IPv4 and IPv6 Special-Purpose Address Registries,
// entry by entry (https://www.iana.org/assignments/iana-ipv4-special-registry and
// https://www.iana.org/assignments/iana-ipv6-special-registry, as of 2026-11-29; the IPv6 registry last changed
// 2025-10-09), each block's first, middle and last address; then the IPv6 forms that carry an IPv4 address, and the
// deprecated blocks outside the registries.
import { describe, expect, test } from "bun:test";
import { addressRefusal } from "../../src/notification/features/endpoints/address-class.ts";
import { allowedAddresses, isForbiddenAddress } from "../../src/notification/features/endpoints/url-guard.ts";

const IPV4_SPECIAL = [
  "0.0.0.0/8", // "This network"
  "0.0.0.0/32", // "This host on this network"
  "10.0.0.0/8", // Private-Use
  "100.64.0.0/10", // Shared Address Space
  "127.0.0.0/8", // Loopback
  "169.254.0.0/16", // Link Local
  "172.16.0.0/12", // Private-Use
  "192.0.0.0/24", // IETF Protocol Assignments
  "192.0.0.0/29", // IPv4 Service Continuity Prefix
  "192.0.0.8/32", // IPv4 dummy address
  "192.0.0.9/32", // Port Control Protocol Anycast
  "192.0.0.10/32", // Traversal Using Relays around NAT Anycast
  "192.0.0.170/32", // NAT64/DNS64 Discovery
  "192.0.0.171/32", // NAT64/DNS64 Discovery
  "192.0.2.0/24", // Documentation (TEST-NET-1)
  "192.31.196.0/24", // AS112-v4
  "192.52.193.0/24", // AMT
  "192.88.99.0/24", // Deprecated (6to4 Relay Anycast)
  "192.88.99.2/32", // 6a44-relay anycast address
  "192.168.0.0/16", // Private-Use
  "192.175.48.0/24", // Direct Delegation AS112 Service
  "198.18.0.0/15", // Benchmarking
  "198.51.100.0/24", // Documentation (TEST-NET-2)
  "203.0.113.0/24", // Documentation (TEST-NET-3)
  "240.0.0.0/4", // Reserved
  "255.255.255.255/32", // Limited Broadcast
];

const IPV6_SPECIAL = [
  "::1/128", // Loopback Address
  "::/128", // Unspecified Address
  "::ffff:0:0/96", // IPv4-mapped Address
  "64:ff9b::/96", // IPv4-IPv6 Translat. (the well-known prefix: its private and special IPv4 addresses)
  "64:ff9b:1::/48", // IPv4-IPv6 Translat. (local use)
  "100::/64", // Discard-Only Address Block
  "100:0:0:1::/64", // Dummy IPv6 Prefix
  "2001::/23", // IETF Protocol Assignments
  "2001::/32", // TEREDO
  "2001:1::1/128", // Port Control Protocol Anycast
  "2001:1::2/128", // Traversal Using Relays around NAT Anycast
  "2001:1::3/128", // DNS-SD Service Registration Protocol Anycast
  "2001:2::/48", // Benchmarking
  "2001:3::/32", // AMT
  "2001:4:112::/48", // AS112-v6
  "2001:10::/28", // Deprecated (previously ORCHID)
  "2001:20::/28", // ORCHIDv2
  "2001:30::/28", // Drone Remote ID Protocol Entity Tags (DETs) Prefix
  "2001:db8::/32", // Documentation
  "2002::/16", // 6to4
  "2620:4f:8000::/48", // Direct Delegation AS112 Service
  "3fff::/20", // Documentation
  "5f00::/16", // Segment Routing (SRv6) SIDs
  "fc00::/7", // Unique-Local
  "fe80::/10", // Link-Local Unicast
];

/** A block's first, middle and last address, in standard text form. */
function samples(cidr: string): string[] {
  const [base, bitsText] = cidr.split("/") as [string, string];
  const v6 = base.includes(":");
  const width = v6 ? 128n : 32n;
  const hostBits = width - BigInt(bitsText);
  const first = v6 ? ipv6ToBigInt(base) : ipv4ToBigInt(base);
  const last = first + (1n << hostBits) - 1n;
  const middle = first + ((last - first) >> 1n);
  const text = v6 ? bigIntToIpv6 : bigIntToIpv4;
  return [...new Set([first, middle, last].map(text))];
}

const ipv4ToBigInt = (text: string) => text.split(".").reduce((n, octet) => (n << 8n) | BigInt(octet), 0n);
const bigIntToIpv4 = (n: bigint) => [24n, 16n, 8n, 0n].map((s) => String((n >> s) & 0xffn)).join(".");

function ipv6ToBigInt(text: string): bigint {
  const [head = "", tail = ""] = text.split("::");
  const groups = (part: string) => (part === "" ? [] : part.split(":"));
  const h = groups(head);
  const t = groups(tail);
  const all = text.includes("::") ? [...h, ...Array(8 - h.length - t.length).fill("0"), ...t] : h;
  return all.reduce((n, g) => (n << 16n) | BigInt(`0x${g}`), 0n);
}
const bigIntToIpv6 = (n: bigint) =>
  Array.from({ length: 8 }, (_, i) => ((n >> BigInt((7 - i) * 16)) & 0xffffn).toString(16)).join(":");

describe("every block of the special-purpose registries is refused", () => {
  test.each(IPV4_SPECIAL.flatMap((block) => samples(block).map((a) => [block, a])))("%s: %s", (_, address) => {
    expect(isForbiddenAddress(address)).toBe(true);
  });
  test.each(IPV6_SPECIAL.flatMap((block) => samples(block).map((a) => [block, a])))("%s: %s", (_, address) => {
    expect(isForbiddenAddress(address)).toBe(true);
  });
});

describe("IPv6 addresses that carry an IPv4 address", () => {
  test.each([
    ["::127.0.0.1", "IPv4-compatible, carrying 127.0.0.1 (loopback)"],
    ["::a00:1", "IPv4-compatible, carrying 10.0.0.1 (private)"],
    ["::8.8.8.8", "IPv4-compatible, carrying 8.8.8.8"],
    ["::ffff:a9fe:a9fe", "IPv4-mapped, carrying 169.254.169.254 (linkLocal)"],
    ["::ffff:0:7f00:1", "IPv4-translated, carrying 127.0.0.1 (loopback)"],
    ["64:ff9b::a00:1", "NAT64, carrying 10.0.0.1 (private)"],
    ["64:ff9b::a9fe:a9fe", "NAT64, carrying 169.254.169.254 (linkLocal)"],
    ["64:ff9b:1::a00:1", "local-use NAT64"],
    ["2002:a00:1::1", "6to4, carrying 10.0.0.1 (private)"],
    ["2002:808:808::1", "6to4, carrying 8.8.8.8"],
    ["2001:0:4136:e378:8000:63bf:80ff:fffe", "Teredo, carrying 127.0.0.1 (loopback)"],
  ])("%s is refused: %s", (address, why) => {
    expect(addressRefusal(address)).toBe(why);
  });

  test("NAT64's well-known prefix carrying a public IPv4 address is allowed (DNS64 answers with it)", () => {
    expect(addressRefusal("64:ff9b::808:808")).toBeUndefined();
  });

  test("a URL whose host is such a literal is refused, naming what it carries", async () => {
    for (const host of ["[::127.0.0.1]", "[64:ff9b:1::7f00:1]", "[2002:7f00:1::]", "[fec0::1]", "[100::1]"]) {
      await expect(
        allowedAddresses(new URL(`http://${host}/hook`), { allowPrivate: false }),
        host,
      ).rejects.toMatchObject({ code: "ENDPOINT_URL_NOT_ALLOWED" });
    }
    await expect(allowedAddresses(new URL("http://[::127.0.0.1]/"), { allowPrivate: false })).rejects.toThrow(
      "carrying 127.0.0.1",
    );
  });

  test("NOTIFICATION_ENDPOINT_ALLOW_PRIVATE still lifts the check", async () => {
    const answer = await allowedAddresses(new URL("http://[2002:7f00:1::]/"), { allowPrivate: true });
    expect(answer).toEqual([{ address: "2002:7f00:1::", family: 6 }]);
  });
});

describe("outside the registries", () => {
  test.each(["fec0::1", "feff::1", "4000::1", "::1:2:3:4:5", "ff02::1"])("%s is refused", (address) => {
    expect(isForbiddenAddress(address)).toBe(true);
  });

  test.each(["8.8.8.8", "93.184.216.34", "1.1.1.1", "2606:4700:4700::1111", "2a00:1450:4001:82b::200e"])(
    "%s, a public address, is allowed",
    (address) => {
      expect(isForbiddenAddress(address)).toBe(false);
    },
  );

  test.each(["", "localhost", "127.1", "0x7f.0.0.1", "1.2.3"])(
    "%p, not an address in standard form, is refused",
    (text) => {
      expect(isForbiddenAddress(text)).toBe(true);
    },
  );
});
