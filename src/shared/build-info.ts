// What is running: the service, the project version, the git commit and the Bun runtime, for `--version`, /healthz and
// the `build_info` metric. tools/build.ts embeds the commit into the executable with `--define BUILD_COMMIT=...`;
// run from source (bun run, bun test) nothing is defined and the commit reads "unknown".
declare const BUILD_COMMIT: string | undefined;

export type BuildInfo = { service: string; version: string; commit: string; bun: string };

/** The commit tools/build.ts embedded, or "unknown" when this code was not built by it. */
export function buildCommit(): string {
  return typeof BUILD_COMMIT === "string" && BUILD_COMMIT !== "" ? BUILD_COMMIT : "unknown";
}

export function buildInfo(service: string, version: string): BuildInfo {
  return { service, version, commit: buildCommit(), bun: Bun.version };
}

/** One line: `entitlement 0.1.0 (commit 1a2b3c4d5e6f, bun 1.4.4)`. */
export function versionLine(info: BuildInfo): string {
  return `${info.service} ${info.version} (commit ${info.commit}, bun ${info.bun})`;
}
