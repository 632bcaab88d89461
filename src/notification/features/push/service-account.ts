// A Google service account key file, as the Cloud console downloads it: what FCM's access tokens are made from. Read
// once at boot (a bad file stops the process with a line naming what is missing); the push worker signs with it.
export type ServiceAccount = {
  projectId: string;
  clientEmail: string;
  privateKey: string;
  privateKeyId: string | undefined;
  tokenUri: string;
};

const stringField = (o: Record<string, unknown>, name: string): string => {
  const value = o[name];
  if (typeof value !== "string" || value.trim() === "") throw new Error(`the service account has no ${name}`);
  return value;
};

/** A service account key file's text (as Google Cloud's console downloads it); throws naming what is missing. */
export function parseServiceAccount(text: string): ServiceAccount {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new Error("the service account file is not JSON");
  }
  if (typeof parsed !== "object" || parsed === null) throw new Error("the service account file is not a JSON object");
  const o = parsed as Record<string, unknown>;
  const tokenUri = stringField(o, "token_uri");
  if (!/^https?:\/\//.test(tokenUri)) throw new Error("the service account's token_uri is not an http(s) URL");
  return {
    projectId: stringField(o, "project_id"),
    clientEmail: stringField(o, "client_email"),
    privateKey: stringField(o, "private_key"),
    privateKeyId: typeof o.private_key_id === "string" ? o.private_key_id : undefined,
    tokenUri,
  };
}
