// How the hosting objects reach each other and the mailboxes: by name, through the Worker's
// bindings (typed by Env), so no hosting module imports another's class.
export const spaceOf = (env: Env, id: string) => env.MINCA_SPACE.get(env.MINCA_SPACE.idFromName(id));
export const accountOf = (env: Env, did: string) => env.MINCA_ACCOUNT.get(env.MINCA_ACCOUNT.idFromName(did));
export const mailboxOf = (env: Env, topic: string) => env.MINCA_MAILBOX.get(env.MINCA_MAILBOX.idFromName(topic));

export type SpaceStub = ReturnType<typeof spaceOf>;
export type MailboxStub = ReturnType<typeof mailboxOf>;
