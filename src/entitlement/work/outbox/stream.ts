// Stream bootstrap. Entitlement owns stream `entitlement-events` (docs/decisions.md): it creates it if missing and
// puts back the subject, duplicate window and replica count it is configured with; other settings are left as found.
import { JetStreamApiCodes, JetStreamApiError, type JetStreamManager, type StreamInfo } from "@nats-io/jetstream";

/** `replicas`: 1 on a single server, 3 on a 3-node cluster (JetStream moves the data when it changes). */
export type StreamSettings = { stream: string; subject: string; duplicateWindowMs: number; replicas: number };

const NANOS_PER_MS = 1_000_000;

/** Rejects settings JetStream would misread (blank names, a window that is not a positive whole number of ms). */
export function validateStreamSettings(s: StreamSettings): void {
  const problems: string[] = [];
  if (!s.stream.trim() || /[\s.*>]/.test(s.stream)) problems.push(`stream name ${JSON.stringify(s.stream)} is invalid`);
  if (!s.subject.trim() || /\s/.test(s.subject)) problems.push(`subject ${JSON.stringify(s.subject)} is invalid`);
  if (!Number.isInteger(s.duplicateWindowMs) || s.duplicateWindowMs <= 0) {
    problems.push(`duplicate window ${s.duplicateWindowMs}ms must be a positive number of milliseconds`);
  }
  if (!Number.isInteger(s.replicas) || s.replicas < 1 || s.replicas > 5) {
    problems.push(`replicas ${s.replicas} must be a whole number from 1 to 5`);
  }
  if (problems.length) throw new Error(`invalid entitlement stream settings: ${problems.join("; ")}`);
}

async function findStream(jsm: JetStreamManager, name: string): Promise<StreamInfo | undefined> {
  try {
    return await jsm.streams.info(name);
  } catch (error) {
    if (error instanceof JetStreamApiError && error.code === JetStreamApiCodes.StreamNotFound) return undefined;
    throw error;
  }
}

/** Creates or updates the stream; returns what it did, for the start-up log line. */
export async function ensureEntitlementStream(
  jsm: JetStreamManager,
  settings: StreamSettings,
): Promise<"created" | "updated" | "unchanged"> {
  validateStreamSettings(settings);
  const duplicateWindow = settings.duplicateWindowMs * NANOS_PER_MS;
  const found = await findStream(jsm, settings.stream);
  if (!found) {
    await jsm.streams.add({
      name: settings.stream,
      subjects: [settings.subject],
      duplicate_window: duplicateWindow,
      num_replicas: settings.replicas,
    });
    return "created";
  }
  const { subjects = [], duplicate_window, num_replicas } = found.config;
  const same =
    subjects.length === 1 &&
    subjects[0] === settings.subject &&
    duplicate_window === duplicateWindow &&
    num_replicas === settings.replicas;
  if (same) return "unchanged";
  await jsm.streams.update(settings.stream, {
    ...found.config,
    subjects: [settings.subject],
    duplicate_window: duplicateWindow,
    num_replicas: settings.replicas,
  });
  return "updated";
}
