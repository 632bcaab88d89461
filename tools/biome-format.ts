// Generated files go through Biome's formatter before they are written or compared, so that `biome check .` and the
// generators agree on every byte.
import { resolve } from "node:path";

const biome = resolve(import.meta.dir, "../node_modules/.bin/biome");

/** `text` as Biome formats a file at `path` (the extension picks the language). */
export function formatWithBiome(path: string, text: string): string {
  const result = Bun.spawnSync([biome, "format", `--stdin-file-path=${path}`], {
    stdin: new TextEncoder().encode(text),
    stdout: "pipe",
    stderr: "pipe",
  });
  if (result.exitCode !== 0) throw new Error(`biome format of ${path} failed: ${result.stderr.toString()}`);
  return result.stdout.toString();
}
