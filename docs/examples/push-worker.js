// The service worker of docs/examples/push.html. Served from the origin's root (its scope is the whole origin). The
// browser has already decrypted the push (its keys never leave the browser): event.data.json() is what Notification
// sends, {notification_id, seq, type, title, body, data}. A notification made from an event has no title: its type
// is shown. Pushes with the same seq replace each other on screen (tag), so a push that arrives twice shows once.

self.addEventListener("install", () => self.skipWaiting());
self.addEventListener("activate", (event) => event.waitUntil(self.clients.claim()));

self.addEventListener("push", (event) => {
  event.waitUntil(show(event.data));
});

async function show(data) {
  let message;
  try {
    message = data ? data.json() : {};
  } catch {
    message = { type: "unreadable push", body: data ? data.text() : "" };
  }
  const title = message.title ?? message.type ?? "Notification";
  await self.registration.showNotification(title, {
    body: message.body ?? "",
    tag: message.seq === undefined ? undefined : `seq-${message.seq}`,
    data: { notification_id: message.notification_id, seq: message.seq, type: message.type },
  });
  // Open pages of this origin list the push too (the example page shows what arrived).
  const pages = await self.clients.matchAll({ type: "window", includeUncontrolled: true });
  for (const page of pages) page.postMessage({ kind: "push", message });
}

self.addEventListener("notificationclick", (event) => {
  event.notification.close();
  event.waitUntil(self.clients.openWindow("/"));
});
