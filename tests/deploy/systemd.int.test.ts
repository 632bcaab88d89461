// deploy/systemd: both units pass `systemd-analyze verify` with no warning (a misspelled key only warns, so any
// output fails), keep the hardening the runbook promises and an exposure score of `systemd-analyze security` at most
// 2.0 ("OK"); and under strace, both compiled executables serving a grant end to end use only the system calls and
// address families their unit allows, and exit 0 on SIGTERM well within TimeoutStopSec.
import { afterAll, beforeAll, expect } from "bun:test";
import { chmodSync, cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { waitUntil } from "../support/wait.ts";
import { command, startPair } from "./pair.ts";
import { run, testWithTool } from "./tools.ts";

const unitDir = resolve(import.meta.dir, "../../deploy/systemd");
const SERVICES = ["entitlement", "notification"] as const;
const test = testWithTool("systemd-analyze", "systemd");
const traced = testWithTool("strace", "strace");
const unitText = (name: string) => readFileSync(join(unitDir, `${name}.service`), "utf8");
const setting = (text: string, key: string) => [...text.matchAll(new RegExp(`^${key}=(.*)$`, "gm"))].map((m) => m[1]);

let root: string;
/** systemd-analyze takes well under a second alone, several on a loaded 2-core machine. */
const ANALYZE_TIMEOUT = 30_000;

/** A root holding the system's own units, an executable at each ExecStart path and the unit under test. */
function installUnit(name: string, text: string): void {
  writeFileSync(join(root, "etc/systemd/system", `${name}.service`), text);
}

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), "systemd-root-"));
  mkdirSync(join(root, "etc/systemd/system"), { recursive: true });
  mkdirSync(join(root, "usr/local/bin"), { recursive: true });
  if (Bun.which("systemd-analyze")) {
    cpSync("/usr/lib/systemd/system", join(root, "usr/lib/systemd/system"), { recursive: true, dereference: false });
  }
  for (const name of SERVICES) {
    writeFileSync(join(root, "usr/local/bin", name), "#!/bin/sh\n");
    chmodSync(join(root, "usr/local/bin", name), 0o755);
  }
});
afterAll(() => {
  if (root) rmSync(root, { recursive: true, force: true });
});

const verify = (name: string) => run(["systemd-analyze", "verify", `--root=${root}`, `${name}.service`]);

for (const name of SERVICES) {
  test(
    `${name}.service passes systemd-analyze verify without a warning`,
    () => {
      installUnit(name, unitText(name));
      const r = verify(name);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout + r.stderr, "systemd-analyze verify prints nothing for a clean unit").toBe("");
    },
    ANALYZE_TIMEOUT,
  );

  test(
    `${name}.service keeps its hardening and scores at most 2.0 in systemd-analyze security`,
    () => {
      const text = unitText(name);
      for (const [key, value] of Object.entries({
        User: name,
        EnvironmentFile: `/etc/${name}/${name}.env`,
        ExecStart: `/usr/local/bin/${name} serve`,
        Restart: "on-failure",
        NoNewPrivileges: "yes",
        ProtectSystem: "strict",
        ProtectHome: "yes",
        PrivateTmp: "yes",
        CapabilityBoundingSet: "",
        LimitNOFILE: "65536",
        TimeoutStopSec: "30s",
      })) {
        expect(setting(text, key), `${name}.service ${key}=`).toEqual([value]);
      }
      expect(text, "the JIT needs writable+executable memory").not.toMatch(/^MemoryDenyWriteExecute=yes/m);
      installUnit(name, text);
      const r = run(["systemd-analyze", "security", "--offline=yes", `--root=${root}`, `${name}.service`]);
      const score = Number(/Overall exposure level for \S+: ([\d.]+)/.exec(r.stdout)?.[1]);
      expect(score, r.stdout + r.stderr).toBeLessThanOrEqual(2.0);
    },
    ANALYZE_TIMEOUT,
  );
}

test(
  "a misspelled key or a bad value is reported by the same check",
  () => {
    installUnit("entitlement", unitText("entitlement").replace("ProtectSystem=strict", "ProtectSytem=strict"));
    expect(verify("entitlement").stderr).toContain("Unknown key 'ProtectSytem'");
    installUnit("entitlement", unitText("entitlement").replace("Restart=on-failure", "Restart=sometimes"));
    expect(verify("entitlement").stderr).toContain("Failed to parse service restart specifier");
  },
  ANALYZE_TIMEOUT,
);

/** Every system call a @group (and the groups inside it) stands for, from systemd-analyze itself. */
function expandSyscalls(group: string, seen = new Set<string>()): Set<string> {
  const calls = new Set<string>();
  if (seen.has(group)) return calls;
  seen.add(group);
  const lines = run(["systemd-analyze", "syscall-filter", group]).stdout.split("\n");
  for (const line of lines.slice(1).map((l) => l.trim())) {
    if (line === "" || line.startsWith("#")) continue;
    if (line.startsWith("@")) for (const c of expandSyscalls(line, seen)) calls.add(c);
    else calls.add(line);
  }
  return calls;
}

traced(
  "under strace, serving a grant end to end uses only allowed system calls and address families; SIGTERM exits 0",
  async () => {
    const text = unitText("entitlement");
    expect(unitText("notification").match(/^(SystemCall|RestrictAddress).*$/gm)).toEqual(
      text.match(/^(SystemCall|RestrictAddress).*$/gm),
    );
    const [allow, deny] = setting(text, "SystemCallFilter") as [string, string];
    const allowed = new Set(allow.split(" ").flatMap((g) => [...expandSyscalls(g)]));
    const denied = new Set(
      deny
        .slice(1)
        .split(" ")
        .flatMap((g) => [...expandSyscalls(g)]),
    );
    const families = new Set((setting(text, "RestrictAddressFamilies")[0] ?? "").split(" "));
    const traceDir = mkdtempSync(join(tmpdir(), "strace-"));
    const pair = await startPair({
      wrap: (name) => ["strace", "-f", "-qq", "-o", join(traceDir, name)],
      env: { LOG_LEVEL: "warn" },
    });
    try {
      const item = { user_id: "u1", stock_keeping_unit: "sku-1", reason: "purchase", purchase_id: "p-1" };
      expect((await command(pair.entitlement.url, "grants", "k1", item)).status).toBe(200);
      await waitUntil(
        async () => (await (await fetch(`${pair.notification.url}/metrics`)).text()).includes('result="sent"'),
        "the grant delivered",
      );
      for (const name of SERVICES) {
        const started = performance.now();
        expect(await pair[name].stop(), `${name} exits 0 on SIGTERM`).toBe(0);
        expect(performance.now() - started, `${name} stops well within TimeoutStopSec`).toBeLessThan(15_000);
        const trace = readFileSync(join(traceDir, name), "utf8");
        const used = new Set([...trace.matchAll(/^\d+ +([a-z0-9_]+)\(/gm)].map((m) => m[1] as string));
        expect(used.size, `${name}: strace saw system calls`).toBeGreaterThan(20);
        const outside = [...used].filter((c) => !allowed.has(c) || denied.has(c));
        expect(outside, `${name}: system calls SystemCallFilter= would refuse`).toEqual([]);
        const socketFamilies = new Set([...trace.matchAll(/socket\((AF_\w+)/g)].map((m) => m[1] as string));
        expect(
          [...socketFamilies].filter((f) => !families.has(f)),
          `${name}: RestrictAddressFamilies=`,
        ).toEqual([]);
      }
    } finally {
      await pair.close();
      rmSync(traceDir, { recursive: true, force: true });
    }
  },
  240_000,
);
