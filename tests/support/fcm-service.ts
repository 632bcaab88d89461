// A stand-in for FCM HTTP v1 and Google's token endpoint that checks what the real ones check: the service account's
// JWT assertion (RS256 under the account's key, iss = client_email, aud = token_uri, the messaging scope, at most an
// hour long) in a JWT-bearer grant, and on messages:send a bearer token it issued and that has not expired. Unknown
// registration tokens get 404 UNREGISTERED, as FCM answers for an app that was uninstalled.
import { randomUUID } from "node:crypto";
import { exportPKCS8, exportSPKI, generateKeyPair, importSPKI, jwtVerify } from "jose";

export type FcmMessage = {
  token: string;
  notification?: { title: string; body: string };
  data: Record<string, string>;
  android: { ttl: string; collapse_key?: string };
  apns: { headers: Record<string, string> };
};

export type FcmAnswer = { status: number; errorCode?: string; retryAfter?: string } | "hang";

export type FcmService = {
  url: string;
  /** The key file's text, as Google Cloud's console gives it. */
  serviceAccountJson: string;
  /** A registration token an app got from FCM; pushes to any other are UNREGISTERED. */
  register: () => string;
  received: { message: FcmMessage; at: number }[];
  /** Access tokens issued, and refusals (a bad assertion or bearer) with why. */
  grants: number;
  refused: string[];
  answer: (token: string, answer: FcmAnswer) => void;
  /** Makes every access token issued so far invalid (as a revoked or expired one would be). */
  revokeTokens: () => void;
  stop: () => void;
};

const PROJECT = "standin-project";
const SCOPE = "https://www.googleapis.com/auth/firebase.messaging";

/** What the stand-in knows: its key, the tokens it registered and issued, its planned answers, what it saw. */
type Standin = {
  spki: CryptoKey;
  clientEmail: string;
  tokenUri: string;
  tokenLifetimeS: number;
  registered: Set<string>;
  answers: Map<string, FcmAnswer>;
  /** Access tokens issued, to the time (ms) each expires. */
  accessTokens: Map<string, number>;
  state: { grants: number; refused: string[]; received: { message: FcmMessage; at: number }[] };
};

/** Google's token endpoint: a JWT-bearer grant whose assertion holds, answered with a new access token. */
async function grant(standin: Standin, request: Request): Promise<Response> {
  const form = new URLSearchParams(await request.text());
  if (form.get("grant_type") !== "urn:ietf:params:oauth:grant-type:jwt-bearer") throw new Error("wrong grant_type");
  const { payload } = await jwtVerify(form.get("assertion") ?? "", standin.spki, {
    issuer: standin.clientEmail,
    audience: standin.tokenUri,
    algorithms: ["RS256"],
  });
  if (payload.scope !== SCOPE) throw new Error("the assertion's scope is not firebase.messaging");
  if (typeof payload.iat !== "number" || typeof payload.exp !== "number" || payload.exp - payload.iat > 3600) {
    throw new Error("the assertion lasts over an hour");
  }
  const token = `ya29.${randomUUID()}`;
  const lifetime = standin.tokenLifetimeS;
  standin.accessTokens.set(token, Date.now() + lifetime * 1000);
  standin.state.grants++;
  return Response.json({ access_token: token, expires_in: lifetime, token_type: "Bearer" });
}

/** messages:send: a bearer token it issued, a registered token, then the planned answer (200 by default). */
async function send(standin: Standin, request: Request): Promise<Response> {
  const { state } = standin;
  const bearer = /^Bearer (.+)$/.exec(request.headers.get("authorization") ?? "")?.[1] ?? "";
  const until = standin.accessTokens.get(bearer);
  if (until === undefined || until < Date.now()) {
    state.refused.push("an unknown or expired access token");
    return Response.json({ error: { code: 401, status: "UNAUTHENTICATED" } }, { status: 401 });
  }
  const { message } = (await request.json()) as { message: FcmMessage };
  if (!standin.registered.has(message.token)) return fcmError(404, "UNREGISTERED");
  const answer = standin.answers.get(message.token);
  if (answer === "hang") return new Promise<Response>(() => {});
  if (answer && answer.status !== 200) return fcmError(answer.status, answer.errorCode, answer.retryAfter);
  state.received.push({ message, at: performance.now() });
  return Response.json({ name: `projects/${PROJECT}/messages/${randomUUID()}` });
}

/** The token endpoint (a refused assertion is 400 invalid_grant, its reason kept) and messages:send; else 404. */
async function route(standin: Standin, request: Request): Promise<Response> {
  const path = new URL(request.url).pathname;
  if (request.method === "POST" && path === "/token") {
    return grant(standin, request).catch((error: Error) => {
      standin.state.refused.push(`assertion: ${error.message}`);
      return Response.json({ error: "invalid_grant" }, { status: 400 });
    });
  }
  if (request.method === "POST" && path === `/v1/projects/${PROJECT}/messages:send`) return send(standin, request);
  return new Response("not found", { status: 404 });
}

export async function startFcmService(options: { tokenLifetimeS?: number } = {}): Promise<FcmService> {
  const { publicKey, privateKey } = await generateKeyPair("RS256", { extractable: true });
  const standin: Standin = {
    spki: await importSPKI(await exportSPKI(publicKey), "RS256"),
    clientEmail: `push@${PROJECT}.iam.gserviceaccount.com`,
    tokenUri: "",
    tokenLifetimeS: options.tokenLifetimeS ?? 3600,
    registered: new Set<string>(),
    answers: new Map<string, FcmAnswer>(),
    accessTokens: new Map<string, number>(),
    state: { grants: 0, refused: [], received: [] },
  };
  const { state, registered, answers, accessTokens } = standin;
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 0,
    fetch: (request) => route(standin, request),
  });
  const url = `http://127.0.0.1:${server.port}`;
  standin.tokenUri = `${url}/token`;
  const serviceAccountJson = JSON.stringify({
    type: "service_account",
    project_id: PROJECT,
    private_key_id: randomUUID().replaceAll("-", ""),
    private_key: await exportPKCS8(privateKey),
    client_email: standin.clientEmail,
    token_uri: standin.tokenUri,
  });
  return {
    url,
    serviceAccountJson,
    register: () => {
      const token = `fcm-${randomUUID()}`;
      registered.add(token);
      return token;
    },
    get received() {
      return state.received;
    },
    get grants() {
      return state.grants;
    },
    get refused() {
      return state.refused;
    },
    answer: (token, answer) => void answers.set(token, answer),
    revokeTokens: () => accessTokens.clear(),
    stop: () => void server.stop(true),
  };
}

function fcmError(status: number, errorCode?: string, retryAfter?: string) {
  const details = errorCode ? [{ "@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", errorCode }] : [];
  const headers: Record<string, string> = retryAfter ? { "retry-after": retryAfter } : {};
  return Response.json({ error: { code: status, status: errorCode ?? "ERROR", details } }, { status, headers });
}
