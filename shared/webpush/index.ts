// Web Push for application servers (RFC 8030, 8188, 8291, 8292): the one sender the relay's
// mailboxes and Minca carriers use. Pure: WebCrypto-free @noble/* and an injected fetch.
export { EceError, eceDecrypt, eceEncrypt } from "./ece";
export { decryptPushMessage, encryptPushMessage, type PushKeys } from "./encrypt";
export { pushSubscriptionSchema, subscriptionKeys, type PushSubscriptionJSON } from "./subscription";
export {
  VapidError,
  VapidSigner,
  generateVapidKeys,
  signVapidJwt,
  vapidKeysFromPrivate,
  vapidSubjectSchema,
  verifyVapid,
  type VapidKeys,
} from "./vapid";
export {
  URGENCIES,
  WebPushSender,
  answerForLog,
  classifyPushAnswer,
  readAtMost,
  parseRetryAfter,
  pushTopicSchema,
  retryDelaySeconds,
  type FetchLike,
  type PushOptions,
  type PushOutcome,
  type PushTarget,
  type RetryPolicy,
  type Urgency,
} from "./send";
