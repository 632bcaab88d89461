// The send API's share of the load: sends of POST /v1/notifications (Notification) at 50/s to random players, each
// 202 to be stored once and notified once per recipient beside the grants. That API is not part of the build yet, so
// this hook sends nothing and the soak reports 0 sends; once it lands, startSends paces the sends here and returns
// them, and the final check counts their notifications with the grants'.
export type SendLoad = { count: () => number; stop: () => Promise<void> };

export function startSends(_options: { players: string[]; urls: () => string[]; rate: number }): SendLoad {
  return { count: () => 0, stop: async () => {} };
}
