// Which addresses an endpoint may reach: only ordinary unicast ones. Every block of the IANA IPv4 and IPv6
// Special-Purpose Address Registries is refused (loopback, private, shared, link-local with the clouds' metadata
// service, documentation, benchmarking, protocol assignments, reserved, multicast, broadcast), as classified by
// ipaddr.js's range(), a maintained list of those registries; and, for IPv6, anything outside 2000::/3, the only block
// IANA hands out for global unicast, which also takes in the deprecated forms the registries no longer list
// (IPv4-compatible ::/96, site-local fec0::/10). An IPv6 address that carries an IPv4 address is decoded first, so
// that the refusal says what it would have reached.
import ipaddr from "ipaddr.js";

type IPv4 = ipaddr.IPv4;
type IPv6 = ipaddr.IPv6;

const GLOBAL_UNICAST = ipaddr.IPv6.parseCIDR("2000::/3");
const NAT64_WELL_KNOWN = ipaddr.IPv6.parseCIDR("64:ff9b::/96");
const NAT64_LOCAL_USE = ipaddr.IPv6.parseCIDR("64:ff9b:1::/48");
const IPV4_COMPATIBLE = ipaddr.IPv6.parseCIDR("::/96");
const TEREDO = ipaddr.IPv6.parseCIDR("2001::/32");
const SIX_TO_FOUR = ipaddr.IPv6.parseCIDR("2002::/16");

const ipv4Of = (high: number, low: number): IPv4 => new ipaddr.IPv4([high >> 8, high & 0xff, low >> 8, low & 0xff]);

/** Why an IPv4 address may not be reached (its special-purpose range), or undefined when it may. */
function ipv4Refusal(address: IPv4): string | undefined {
  const range = address.range();
  return range === "unicast" ? undefined : range;
}

type Embedded = { form: string; ipv4: IPv4 };

/**
 * The IPv4 address an IPv6 one carries, by the form that carries it: IPv4-mapped and IPv4-translated (the last 32
 * bits), IPv4-compatible (the last 32 bits, :: and ::1 aside), NAT64's well-known prefix (the last 32 bits), 6to4
 * (bits 16 to 47) and Teredo (the client's address, the last 32 bits inverted).
 */
function embeddedIPv4(address: IPv6): Embedded | undefined {
  const p = address.parts as [number, number, number, number, number, number, number, number];
  const last = () => ipv4Of(p[6], p[7]);
  const range = address.range();
  if (range === "ipv4Mapped") return { form: "IPv4-mapped", ipv4: last() };
  if (range === "rfc6145") return { form: "IPv4-translated", ipv4: last() };
  if (address.match(NAT64_WELL_KNOWN)) return { form: "NAT64", ipv4: last() };
  if (address.match(SIX_TO_FOUR)) return { form: "6to4", ipv4: ipv4Of(p[1], p[2]) };
  if (address.match(TEREDO)) return { form: "Teredo", ipv4: ipv4Of(~p[6] & 0xffff, ~p[7] & 0xffff) };
  if (address.match(IPV4_COMPATIBLE) && range !== "loopback" && range !== "unspecified") {
    return { form: "IPv4-compatible", ipv4: last() };
  }
  return undefined;
}

/**
 * Why an IPv6 address may not be reached, or undefined when it may. NAT64's well-known prefix is the one carrier of an
 * IPv4 address allowed, when what it carries may be reached: an IPv6-only network's DNS64 answers with it for every
 * IPv4 receiver. The other carriers are refused whatever they carry (mapped and translated addresses reach IPv4 by
 * another road than the checked one; IPv4-compatible, 6to4 and Teredo are deprecated tunnels whose relay may sit inside
 * the network; the local-use NAT64 prefix's layout is the local network's own).
 */
function ipv6Refusal(address: IPv6): string | undefined {
  const embedded = embeddedIPv4(address);
  if (embedded) {
    const inner = ipv4Refusal(embedded.ipv4);
    const carried = `${embedded.form}, carrying ${embedded.ipv4.toString()}`;
    if (embedded.form !== "NAT64") return inner ? `${carried} (${inner})` : carried;
    return inner ? `${carried} (${inner})` : undefined;
  }
  if (address.match(NAT64_LOCAL_USE)) return "local-use NAT64";
  const range = address.range();
  if (range !== "unicast") return range;
  return address.match(GLOBAL_UNICAST) ? undefined : "outside global unicast 2000::/3";
}

/**
 * Why an endpoint may not reach this address (a short name of its class, for the refusal's message), or undefined when
 * it may. Anything that is not an IP address in its standard text form is refused.
 */
export function addressRefusal(address: string): string | undefined {
  if (ipaddr.IPv4.isValidFourPartDecimal(address)) return ipv4Refusal(ipaddr.IPv4.parse(address));
  // ipaddr.js reads `::a.b.c.d` as IPv4-mapped (::ffff:a.b.c.d); it is IPv4-compatible (::a.b.c.d, how inet_ntop
  // writes one), so the zero group is spelled out before parsing.
  const text = address.replace(/^::(?=\d+\.\d+\.\d+\.\d+$)/, "::0:");
  if (ipaddr.IPv6.isValid(text)) return ipv6Refusal(ipaddr.IPv6.parse(text));
  return "not an IP address";
}
