// How the hosting objects reach each other and the mailboxes: by name, through the Worker's
// bindings (typed by Env) and the one way to reach an object (server/objects.ts), so no hosting
// module imports another's class.
import { objectOf } from "../../server/objects";

export const spaceOf = (env: Env, id: string) => objectOf(env, "MINCA_SPACE", id);
export const accountOf = (env: Env, did: string) => objectOf(env, "MINCA_ACCOUNT", did);
export const mailboxOf = (env: Env, topic: string) => objectOf(env, "MINCA_MAILBOX", topic);

export type SpaceStub = ReturnType<typeof spaceOf>;
export type MailboxStub = ReturnType<typeof mailboxOf>;
