// The connections an account home remembers (the Minca protocol §2.10), as far as the home's refusals need
// them (§2.5): a request is refused whose audience is the home's own session key (or the
// account's root key), or a key another connection of a different kind already holds. A
// connection by code is kept by its audience, and connecting the same key again by code replaces
// it. The home keeps one store per account by default (in memory, for as long as the page runs),
// so these refusals always run; a home that keeps connections elsewhere passes its own store.

type ConnectionKind = "app" | "code" | "carrier";

interface HomeConnection {
  audience: string;
  kind: ConnectionKind;
  origin: string;
}

export class HomeConnections {
  private readonly byAudience = new Map<string, HomeConnection>();

  constructor(public sessionDid?: string) {}

  /** Remembers a connection the home granted; the same audience again replaces it. */
  remember(c: HomeConnection): void {
    this.byAudience.set(c.audience, c);
  }

  holder(did: string): HomeConnection | undefined {
    return this.byAudience.get(did);
  }

  /** Whether `did` is held by a connection of another kind (the Minca protocol §2.5, §2.10: one key is never both). */
  heldElsewhere(did: string, kind: ConnectionKind): boolean {
    const held = this.byAudience.get(did);
    return held !== undefined && held.kind !== kind;
  }
}

const perAccount = new WeakMap<object, HomeConnections>();

/** The home's default store for an account (one per account object), knowing the home's own session key when the account names it. */
export function connectionsOf(account: object & { session?: { did: string } }): HomeConnections {
  let c = perAccount.get(account);
  if (!c) {
    c = new HomeConnections(account.session?.did);
    perAccount.set(account, c);
  }
  return c;
}
