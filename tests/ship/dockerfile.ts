// Reads the Dockerfile's final stage (everything after the last FROM), so the scratch-root test assembles exactly the
// files the image would hold, runs as the image's user, with the image's environment and entrypoint.
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
};

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

export function readFinalStage(root: string, args: Record<string, string>): FinalStage {
  const lines = instructions(readFileSync(join(root, "Dockerfile"), "utf8"));
  const lastFrom = lines.findLastIndex((l) => /^FROM\s/i.test(l));
  const stage: FinalStage = {
    base: "",
    copies: [],
    user: undefined,
    env: {},
    entrypoint: [],
    cmd: [],
    healthcheck: [],
  };
  stage.base = lines[lastFrom]?.split(/\s+/)[1] ?? "";
  for (const line of lines.slice(lastFrom + 1)) {
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
      case "ARG":
      case "EXPOSE":
      case "LABEL":
        break;
      default:
        throw new Error(`the final stage has an instruction this test does not model: ${line}`);
    }
  }
  return stage;
}

/** The RUN instructions of the builder stage (everything before the last FROM), continuation lines joined. */
export function builderRuns(root: string): string[] {
  const lines = instructions(readFileSync(join(root, "Dockerfile"), "utf8"));
  const lastFrom = lines.findLastIndex((l) => /^FROM\s/i.test(l));
  return lines.slice(0, lastFrom).filter((l) => /^RUN\s/i.test(l));
}

/** The build-context paths the builder stage copies (`COPY <src>... <dst>` without --from, before the last FROM). */
export function builderContextPaths(root: string): string[] {
  const lines = instructions(readFileSync(join(root, "Dockerfile"), "utf8"));
  const lastFrom = lines.findLastIndex((l) => /^FROM\s/i.test(l));
  return lines
    .slice(0, lastFrom)
    .filter((l) => /^COPY\s/i.test(l) && !/--from=/.test(l))
    .flatMap((l) => l.split(/\s+/).slice(1, -1));
}
