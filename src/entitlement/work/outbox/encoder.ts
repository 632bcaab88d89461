// The event encoder, loaded on first use rather than at start: building the protobuf descriptors (@bufbuild/protobuf
// and the generated code) was the largest single part of the executable's module loading (~17 % of a CPU profile of
// `entitlement --version`; 10 alternating runs on a loaded machine, median CPU 0.297 → 0.275 s), and nothing is
// encoded before /readyz. The worker loads it once the stream is ready, so the first event does not wait for it.
import type * as Encode from "./encode.ts";

let loading: Promise<typeof Encode> | undefined;

export function loadEncoder(): Promise<typeof Encode> {
  loading ??= import("./encode.ts");
  return loading;
}
