// Reads the Dockerfile's final stage (the last one, with the stages it is built FROM: the runtime stage and the
// service's own EXPOSE), so the scratch-root test assembles exactly the files the image would hold, runs as the
// image's user, with the image's environment and entrypoint.
import { readFileSync } from "node:fs";
import { join } from "node:path";

export type FinalStage = {
  base: string;
  /** `COPY --from=<stage> <src> <dst>` lines, with build arguments substituted. */
  copies: { from: string; src: string; dst: string }[];
  user: string | undefined;
  env: Record<string, string>;
  entrypoint: string[];
  cmd: string[];
  /** The HEALTHCHECK's CMD (exec form), empty when there is none. */
  healthcheck: string[];
  /** The ports of its EXPOSE lines. */
  expose: string[];
};

type Stage = { base: string; name: string | undefined; lines: string[] };

function substitute(text: string, args: Record<string, string>): string {
  return text.replace(/\$\{(\w+)\}|\$(\w+)/g, (_, a, b) => args[a ?? b] ?? "");
}

/** Joins continuation lines and drops comments. */
function instructions(dockerfile: string): string[] {
  return dockerfile
    .replace(/\\\n/g, " ")
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l !== "" && !l.startsWith("#"));
}

/** The ARG defaults before the first FROM, which FROM lines may use. */
function globalArgs(lines: string[]): Record<string, string> {
  const first = lines.findIndex((l) => /^FROM\s/i.test(l));
  const pairs = lines
    .slice(0, first)
    .map((l) => /^ARG\s+(\w+)=(\S+)$/i.exec(l))
    .filter((m): m is RegExpExecArray => m !== null);
  return Object.fromEntries(pairs.map((m) => [m[1], m[2]]));
}

/** Each stage: its base (build arguments substituted), its name and its instructions after the FROM. */
function stagesOf(lines: string[], args: Record<string, string>): Stage[] {
  const stages: Stage[] = [];
  for (const line of lines) {
    const from = /^FROM\s+(\S+)(?:\s+AS\s+(\S+))?$/i.exec(line);
    if (from) stages.push({ base: substitute(from[1] as string, args), name: from[2]?.toLowerCase(), lines: [] });
    else stages.at(-1)?.lines.push(line);
  }
  return stages;
}

/** The last stage's instructions with those of the stages it is built FROM first, and the image at the bottom. */
function finalChain(root: string, given: Record<string, string>): { base: string; lines: string[] } {
  const all = instructions(readFileSync(join(root, "Dockerfile"), "utf8"));
  const stages = stagesOf(all, { ...globalArgs(all), ...given });
  let stage = stages.at(-1) as Stage;
  const chain = [stage];
  for (
    let parent = stages.find((s) => s.name === stage.base);
    parent;
    parent = stages.find((s) => s.name === stage.base)
  ) {
    stage = parent;
    chain.unshift(stage);
  }
  return { base: stage.base, lines: chain.flatMap((s) => s.lines) };
}

export function readFinalStage(root: string, args: Record<string, string>): FinalStage {
  const { base, lines } = finalChain(root, args);
  const stage: FinalStage = {
    base,
    copies: [],
    user: undefined,
    env: {},
    entrypoint: [],
    cmd: [],
    healthcheck: [],
    expose: [],
  };
  for (const line of lines) {
    const [keyword = "", ...rest] = line.split(/\s+/);
    const text = substitute(rest.join(" "), args);
    switch (keyword.toUpperCase()) {
      case "COPY": {
        const parts = text.split(/\s+/);
        const from = parts.find((p) => p.startsWith("--from="))?.slice("--from=".length);
        const paths = parts.filter((p) => !p.startsWith("--"));
        if (!from || paths.length !== 2) throw new Error(`unsupported COPY in the final stage: ${line}`);
        stage.copies.push({ from, src: paths[0] as string, dst: paths[1] as string });
        break;
      }
      case "USER":
        stage.user = text;
        break;
      case "ENV":
        for (const pair of text.split(/\s+/)) {
          const eq = pair.indexOf("=");
          if (eq > 0) stage.env[pair.slice(0, eq)] = pair.slice(eq + 1);
        }
        break;
      case "ENTRYPOINT":
        stage.entrypoint = JSON.parse(text);
        break;
      case "CMD":
        stage.cmd = JSON.parse(text);
        break;
      case "HEALTHCHECK": {
        const exec = /\bCMD\s+(\[.*\])\s*$/.exec(text)?.[1];
        if (!exec) throw new Error(`the HEALTHCHECK must use the exec form (no shell in the image): ${line}`);
        stage.healthcheck = JSON.parse(exec);
        break;
      }
      case "EXPOSE":
        stage.expose.push(...text.split(/\s+/));
        break;
      case "ARG":
      case "LABEL":
        break;
      default:
        throw new Error(`the final stage has an instruction this test does not model: ${line}`);
    }
  }
  return stage;
}

/** The builder stage's instructions. */
function builderLines(root: string): string[] {
  const lines = instructions(readFileSync(join(root, "Dockerfile"), "utf8"));
  const builder = stagesOf(lines, {}).find((s) => s.name === "builder");
  if (!builder) throw new Error("the Dockerfile has no stage named builder");
  return builder.lines;
}

/** The RUN instructions of the builder stage, continuation lines joined. */
export function builderRuns(root: string): string[] {
  return builderLines(root).filter((l) => /^RUN\s/i.test(l));
}

/** The build-context paths the builder stage copies (`COPY <src>... <dst>` without --from). */
export function builderContextPaths(root: string): string[] {
  return builderLines(root)
    .filter((l) => /^COPY\s/i.test(l) && !/--from=/.test(l))
    .flatMap((l) => l.split(/\s+/).slice(1, -1));
}
