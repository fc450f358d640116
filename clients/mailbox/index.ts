// The Minca mailbox client SDK: what apps import.
export { MailboxClient, MailboxError } from "./client";
export type { MailboxClientOptions, MailboxItem, MailboxPage } from "./client";
export { wakeSchema, type Wake } from "../../shared/mailbox/messages";
export { vapidPublicKey } from "./vapid";
