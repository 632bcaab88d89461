// The shell examples of docs/api.md, run as they are (in order, in one bash) against a live stack. curl is wrapped
// only to report each call's status, method and URL on stderr, so the examples' own output stays as a reader sees it.
import { readFileSync } from "node:fs";
import { resolve } from "node:path";

const API_GUIDE = resolve(import.meta.dir, "../../docs/api.md");

export type Call = { status: number; method: string; path: string };

export function apiExamples(): string[] {
  return [...readFileSync(API_GUIDE, "utf8").matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1] as string);
}

const REPORT = "curl() { command curl --write-out '%{stderr}CALL %{http_code} %{method} %{url_effective}\\n' \"$@\"; }";

/** Runs every example with the variables the stack prints; the calls they made and what they printed. */
export async function runApiExamples(vars: Record<string, string>): Promise<{ calls: Call[]; output: string }> {
  const script = ["set -euo pipefail", REPORT, ...apiExamples()].join("\n");
  const proc = Bun.spawn(["bash", "-c", script], { env: { ...process.env, ...vars }, stdout: "pipe", stderr: "pipe" });
  const [code, stdout, stderr] = await Promise.all([
    proc.exited,
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
  ]);
  if (code !== 0) throw new Error(`the examples of docs/api.md failed (exit ${code}):\n${stdout}\n${stderr}`);
  const calls = [...stderr.matchAll(/^CALL (\d{3}) (\S+) (\S+)$/gm)].map(([, status, method, url]) => ({
    status: Number(status),
    method: method as string,
    path: new URL(url as string).pathname,
  }));
  return { calls, output: stdout };
}

/** Every operation of an OpenAPI document as [method, path pattern]. */
export function documentedOperations(file: string): { method: string; template: string; pattern: RegExp }[] {
  const doc = JSON.parse(readFileSync(file, "utf8")) as { paths: Record<string, Record<string, unknown>> };
  return Object.entries(doc.paths).flatMap(([template, ops]) =>
    Object.keys(ops).map((method) => ({
      method: method.toUpperCase(),
      template,
      pattern: new RegExp(`^${template.replace(/\{[^}]+\}/g, "[^/]+")}$`),
    })),
  );
}
