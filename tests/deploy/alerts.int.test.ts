// deploy/prometheus: the alert rules load (`promtool check rules`), behave as their unit tests say
// (`promtool test rules`: each alert fires on its symptom and stays quiet otherwise) and the example configuration
// that loads them is valid; and a rule that no longer fires on its symptom is caught.
import { expect } from "bun:test";
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { run, testWithTool } from "./tools.ts";

/** promtool takes about 4 s for the rule tests alone, more on a loaded 2-core machine. */
const PROMTOOL_TIMEOUT = 60_000;

const dir = resolve(import.meta.dir, "../../deploy/prometheus");
const test = testWithTool("promtool", "prometheus");

test(
  "promtool check rules accepts alerts.yml",
  () => {
    const r = run(["promtool", "check", "rules", "alerts.yml"], dir);
    expect(r.code, r.stdout + r.stderr).toBe(0);
  },
  PROMTOOL_TIMEOUT,
);

test(
  "every alert in alerts.yml is exercised by alerts.test.yml, and promtool test rules passes",
  () => {
    const alerts = [...readFileSync(join(dir, "alerts.yml"), "utf8").matchAll(/^\s+- alert: (\w+)$/gm)].map(
      (m) => m[1],
    );
    const tested = new Set(
      [...readFileSync(join(dir, "alerts.test.yml"), "utf8").matchAll(/alertname: (\w+)$/gm)].map((m) => m[1]),
    );
    expect(alerts.length).toBeGreaterThan(10);
    expect(
      alerts.filter((a) => !tested.has(a)),
      "alerts without a unit test",
    ).toEqual([]);
    const r = run(["promtool", "test", "rules", "alerts.test.yml"], dir);
    expect(r.code, r.stdout + r.stderr).toBe(0);
  },
  PROMTOOL_TIMEOUT,
);

test(
  "a rule whose threshold drifts fails its unit test",
  () => {
    const scratch = mkdtempSync(join(tmpdir(), "alerts-"));
    try {
      copyFileSync(join(dir, "alerts.test.yml"), join(scratch, "alerts.test.yml"));
      const rules = readFileSync(join(dir, "alerts.yml"), "utf8");
      const drifted = rules.replace(
        "max(notification_backlog_current) > 1000",
        "max(notification_backlog_current) > 1e6",
      );
      expect(drifted).not.toBe(rules);
      writeFileSync(join(scratch, "alerts.yml"), drifted);
      const r = run(["promtool", "test", "rules", "alerts.test.yml"], scratch);
      expect(r.code, "promtool test rules must fail").not.toBe(0);
      expect(r.stdout + r.stderr).toContain("NotificationBacklogHigh");
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  },
  PROMTOOL_TIMEOUT,
);

test(
  "the example prometheus.yml is valid and loads alerts.yml",
  () => {
    const r = run(["promtool", "check", "config", "--syntax-only", "prometheus.yml"], dir);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(readFileSync(join(dir, "prometheus.yml"), "utf8")).toMatch(/rule_files:\s+- alerts\.yml/);
  },
  PROMTOOL_TIMEOUT,
);
