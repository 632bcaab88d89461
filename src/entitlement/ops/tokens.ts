// `entitlement token new NAME SCOPES`: prints a fresh bearer token for the caller and the ENTITLEMENT_AUTH_TOKENS entry
// (its SHA-256 digest) for the service. Nothing is stored: the token is shown once, the configuration keeps the digest.

import { newToken, parseScopes, TOKEN_NAME, tokenEntryLine } from "../../shared/auth/tokens.ts";
import type { Subcommand } from "../../shared/cli.ts";
import { checkedRun, operation, positionals, quoted, UsageError } from "../../shared/cli-args.ts";

export const TOKEN_USAGE =
  "usage: entitlement token new NAME SCOPES   (NAME: [a-z0-9_-]{1,64}; SCOPES: read, write or read+write)";

function parseTokenArgs(args: string[]): { name: string; scopes: string } {
  const [first, ...rest] = args;
  operation(first, ["new"] as const);
  const [name, scopes] = positionals(rest, ["NAME", "SCOPES"]) as [string, string];
  if (!TOKEN_NAME.test(name))
    throw new UsageError(`NAME ${quoted(name)} must be 1 to 64 characters of a-z, 0-9, _ and -`);
  if (!parseScopes(scopes)) throw new UsageError(`SCOPES ${quoted(scopes)} must be read, write or read+write`);
  return { name, scopes };
}

export function tokenSubcommand(out: (line: string) => void = console.log): Subcommand {
  const check = { program: "entitlement", name: "token", usage: TOKEN_USAGE, parse: parseTokenArgs };
  return {
    name: "token",
    summary: "token new NAME SCOPES: print a fresh API token and its ENTITLEMENT_AUTH_TOKENS entry",
    run: checkedRun(check, async ({ name, scopes }) => {
      const token = newToken();
      out(`token: ${token}`);
      out(`entry: ${tokenEntryLine(name, token, scopes)}`);
      out(
        "Give the token to the caller (it is shown only once); add the entry to ENTITLEMENT_AUTH_TOKENS (comma-separated).",
      );
      return 0;
    }),
  };
}
