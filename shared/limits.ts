// Every bound the relay enforces, in one place. The information document (GET /) lists this
// object as it is, and the README's limits table is checked against it by a test. The bounds
// are written per protocol in shared/limits/ (common, tally, passnote, minca, mailbox); this
// module gathers them, and importers name it alone.
import { ADMIN_LIMITS, COMMON_LIMITS, STATS_LIMITS, STORAGE_LIMITS } from "./limits/common";
import { MAILBOX_LIMITS, WEBPUSH_LIMITS } from "./limits/mailbox";
import { MINCA_HOST_LIMITS, MINCA_ROOM_LIMITS, MINCA_WAKE_LIMITS } from "./limits/minca";
import { PASSNOTE_LIMITS } from "./limits/passnote";
import { TALLY_LIMITS } from "./limits/tally";

export { ADMIN_LIMITS, CLOSE_CODES, COMMON_LIMITS, STATS_LIMITS, STORAGE_LIMITS } from "./limits/common";
export { MAILBOX_LIMITS, WEBPUSH_LIMITS } from "./limits/mailbox";
export { MINCA_HOST_LIMITS, MINCA_ROOM_LIMITS, MINCA_WAKE_LIMITS } from "./limits/minca";
export { PASSNOTE_LIMITS } from "./limits/passnote";
export { TALLY_LIMITS } from "./limits/tally";

export const LIMITS = {
  common: COMMON_LIMITS,
  tally: TALLY_LIMITS,
  passnote: PASSNOTE_LIMITS,
  minca_rooms: MINCA_ROOM_LIMITS,
  mailbox: MAILBOX_LIMITS,
  webpush: WEBPUSH_LIMITS,
  minca_host: MINCA_HOST_LIMITS,
  minca_wake: MINCA_WAKE_LIMITS,
  storage: STORAGE_LIMITS,
  stats: STATS_LIMITS,
  admin: ADMIN_LIMITS,
} as const;
