// `entitlement token new NAME SCOPES`: prints a fresh bearer token for the caller and the ENTITLEMENT_AUTH_TOKENS entry
// (its SHA-256 digest) for the service. Nothing is stored: the token is shown once, the configuration keeps the digest.

import { newToken, parseScopes, TOKEN_NAME, tokenEntryLine } from "../../shared/auth/tokens.ts";
import { EXIT_USAGE, type Subcommand } from "../../shared/cli.ts";

export const TOKEN_USAGE =
  "usage: entitlement token new NAME SCOPES   (NAME: [a-z0-9_-]{1,64}; SCOPES: read, write or read+write)";

export function tokenSubcommand(out: (line: string) => void = console.log): Subcommand {
  return {
    name: "token",
    summary: "token new NAME SCOPES: print a fresh API token and its ENTITLEMENT_AUTH_TOKENS entry",
    run: async (args) => {
      const [op, name, scopes, ...rest] = args;
      const problem =
        op !== "new" || name === undefined || scopes === undefined || rest.length > 0
          ? "expected: token new NAME SCOPES"
          : !TOKEN_NAME.test(name)
            ? `NAME '${name}' must be 1 to 64 characters of a-z, 0-9, _ and -`
            : !parseScopes(scopes)
              ? `SCOPES '${scopes}' must be read, write or read+write`
              : undefined;
      if (problem || name === undefined || scopes === undefined) {
        console.error(`entitlement token: ${problem}\n${TOKEN_USAGE}`);
        return EXIT_USAGE;
      }
      const token = newToken();
      out(`token: ${token}`);
      out(`entry: ${tokenEntryLine(name, token, scopes)}`);
      out(
        "Give the token to the caller (it is shown only once); add the entry to ENTITLEMENT_AUTH_TOKENS (comma-separated).",
      );
      return 0;
    },
  };
}
