// Stream and durable consumer set-up. The entitlement stream belongs to Entitlement: this service only creates it
// when it is missing and never changes it (decisions.md). The advisory streams belong to this service. Every stream
// created here takes the configured replica count; durables leave theirs unset, so they follow their stream's.
import {
  AckPolicy,
  JetStreamApiCodes,
  JetStreamApiError,
  type JetStreamManager,
  type StreamInfo,
} from "@nats-io/jetstream";
import { nanos } from "@nats-io/transport-node";

function isNotFound(error: unknown, code: number): boolean {
  return error instanceof JetStreamApiError && (error.code === code || error.status === 404);
}

/** Creates the stream when it does not exist; an existing stream is left exactly as it is. */
export async function ensureStreamExists(
  jsm: JetStreamManager,
  stream: { name: string; subjects: string[]; replicas: number; duplicateWindowMs?: number },
): Promise<StreamInfo> {
  try {
    return await jsm.streams.info(stream.name);
  } catch (error) {
    if (!isNotFound(error, JetStreamApiCodes.StreamNotFound)) throw error;
  }
  try {
    return await jsm.streams.add({
      name: stream.name,
      subjects: stream.subjects,
      num_replicas: stream.replicas,
      ...(stream.duplicateWindowMs ? { duplicate_window: nanos(stream.duplicateWindowMs) } : {}),
    });
  } catch (error) {
    // Another replica (or Entitlement) created it between our info and add: take theirs as it is.
    return await jsm.streams.info(stream.name).catch(() => {
      throw error;
    });
  }
}

/** A stream this service owns: created when missing, its subjects and replica count set back when they differ. */
export async function ensureOwnedStream(
  jsm: JetStreamManager,
  stream: { name: string; subjects: string[]; replicas: number },
): Promise<StreamInfo> {
  const info = await ensureStreamExists(jsm, stream);
  const have = [...(info.config.subjects ?? [])].sort();
  const want = [...stream.subjects].sort();
  const same = have.join("\n") === want.join("\n") && info.config.num_replicas === stream.replicas;
  if (same) return info;
  return jsm.streams.update(stream.name, { ...info.config, subjects: stream.subjects, num_replicas: stream.replicas });
}

export type DurableSpec = {
  stream: string;
  durable: string;
  ackWaitMs: number;
  maxDeliver: number;
  filterSubject?: string;
};

/** Creates the durable pull consumer, or updates the settings this service controls on an existing one. */
export async function ensureDurable(jsm: JetStreamManager, spec: DurableSpec): Promise<void> {
  const settings = {
    ack_wait: nanos(spec.ackWaitMs),
    max_deliver: spec.maxDeliver,
    ...(spec.filterSubject ? { filter_subject: spec.filterSubject } : {}),
  };
  try {
    await jsm.consumers.info(spec.stream, spec.durable);
  } catch (error) {
    if (!isNotFound(error, JetStreamApiCodes.ConsumerNotFound)) throw error;
    try {
      await jsm.consumers.add(spec.stream, {
        durable_name: spec.durable,
        ack_policy: AckPolicy.Explicit,
        ...settings,
      });
      return;
    } catch (addError) {
      // Created concurrently by another replica: fall through to the update below.
      await jsm.consumers.info(spec.stream, spec.durable).catch(() => {
        throw addError;
      });
    }
  }
  await jsm.consumers.update(spec.stream, spec.durable, settings);
}
