import type { TallyUser } from "../durable-objects/tally-user";
import type { PassnoteRoom } from "../durable-objects/passnote-room";
import type { MincaRoom } from "../durable-objects/minca-room";

/** The Worker's bindings and settings (wrangler.toml [vars], secrets). */
export interface Env {
  TALLY_USER: DurableObjectNamespace<TallyUser>;
  PASSNOTE_ROOM: DurableObjectNamespace<PassnoteRoom>;
  MINCA_ROOM: DurableObjectNamespace<MincaRoom>;
  /** Shown as `name` in the information document. */
  RELAY_NAME?: string;
  /** The relay's public URL (e.g. wss://relay.example), accepted in auth events' relay tags. */
  PUBLIC_URL?: string;
}
