// The allow-lists of deploy/nats/least-privilege.conf, read from the file itself, so that a test can hand the very same
// permissions to another authentication scheme (user JWTs in operator mode) instead of keeping a copy that drifts.
import { readFileSync } from "node:fs";

export type UserPermissions = { publish: string[]; subscribe: string[] };

const CONFIG = new URL("../../deploy/nats/least-privilege.conf", import.meta.url);

/** Each user's `publish` and `subscribe` allow-lists; every subject in the file is a quoted string. */
export function leastPrivilegePermissions(): Record<string, UserPermissions> {
  const text = readFileSync(CONFIG, "utf8").replace(/#.*$/gm, "");
  const users: Record<string, UserPermissions> = {};
  for (const block of text.split(/\buser:\s*/).slice(1)) {
    const name = /^[\w-]+/.exec(block)?.[0];
    if (!name) throw new Error("least-privilege.conf: a user without a name");
    users[name] = { publish: allowList(block, "publish"), subscribe: allowList(block, "subscribe") };
  }
  return users;
}

function allowList(block: string, kind: "publish" | "subscribe"): string[] {
  const list = new RegExp(`${kind}:\\s*\\{\\s*allow:\\s*\\[([^\\]]*)\\]`).exec(block)?.[1];
  if (list === undefined) throw new Error(`least-privilege.conf: no ${kind} allow-list`);
  return [...list.matchAll(/"([^"]+)"/g)].map((m) => m[1] as string);
}
