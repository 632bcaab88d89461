// A receiver of Notification's webhooks (docs/webhooks.md): verify the signature with the shared secret, skip a
// delivery already handled (the same `webhook-id`), and answer 2xx only once the notification is kept.
import { Webhook } from "standardwebhooks";

export type WebhookNotification = {
  notification_id: string;
  event_id: string;
  user_id: string;
  type: "EntitlementGranted" | "EntitlementRevoked" | "EntitlementExtended" | "PointsGranted" | "MatchFound";
  occurred_at: string;
  payload: Record<string, unknown>;
};

export function webhookReceiver(secret: string, handle: (n: WebhookNotification) => Promise<void>) {
  const webhook = new Webhook(secret); // the endpoint's whsec_… secret (or NOTIFICATION_WEBHOOK_SECRET)
  const handled = new Set<string>(); // in production: a table with a unique key on notification_id
  return async (request: Request): Promise<Response> => {
    const body = await request.text(); // verify the exact bytes received, before any JSON parsing
    let notification: WebhookNotification;
    try {
      // Checks webhook-signature over webhook-id, webhook-timestamp and the body; refuses timestamps 5 min off.
      notification = webhook.verify(body, Object.fromEntries(request.headers)) as WebhookNotification;
    } catch {
      return new Response("invalid signature", { status: 401 });
    }
    if (!handled.has(notification.notification_id)) {
      await handle(notification);
      handled.add(notification.notification_id);
    }
    return new Response(null, { status: 204 });
  };
}

// Bun.serve({ port: 3000, fetch: webhookReceiver(process.env.WEBHOOK_SECRET ?? "", async (n) => console.log(n)) });
