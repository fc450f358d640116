// Test subclasses of production objects (bound in place of them by test/worker/entry.ts): what a
// test injects (the fetch a mailbox's wakes go out with, the ledger's totals) and what it reads,
// kept out of the production classes.
import { MincaMailbox } from "../../durable-objects/mailbox/minca-mailbox";
import { MincaAccount } from "../../durable-objects/minca-host/minca-account";
import { RelayLedger } from "../../durable-objects/relay/relay-ledger";
import { RelayPolicy } from "../../durable-objects/relay/relay-policy";
import type { PolicySnapshot } from "../../server/policy";
import { PassnoteRoom as ProductionPassnoteRoom } from "../../durable-objects/passnote/passnote-room";
import { MincaRoom as ProductionMincaRoom } from "../../durable-objects/minca-rooms/minca-room";
import { TallyUser as ProductionTallyUser } from "../../durable-objects/tally/tally-user";
import type { FetchLike } from "../../server/webpush/send";
import type { StorageTotals } from "../../shared/storage";

export class TestMincaMailbox extends MincaMailbox {
  /** What this mailbox's wakes go out with (a test's push service); the runtime's fetch until set. */
  fetchWith: FetchLike | undefined;

  protected pushFetch(url: string, init: RequestInit): Promise<Response> {
    return this.fetchWith ? this.fetchWith(url, init) : super.pushFetch(url, init);
  }

  /** RPC: how many long-polls wait for the next item. */
  waitingPolls(): number {
    return this.waiters.size;
  }

  /** RPC: the receivers by id and endpoint. */
  receivers(): Array<{ id: string; endpoint: string }> {
    if (!this.schema.exists) return [];
    return this.sql.exec<{ id: string; endpoint: string }>("SELECT id, endpoint FROM receivers ORDER BY created_at").toArray();
  }
}

export class TestMincaAccount extends MincaAccount {
  /** What this account's wakes go out with (a test's push service); the runtime's fetch until set. */
  fetchWith: FetchLike | undefined;

  protected pushFetch(url: string, init: RequestInit): Promise<Response> {
    return this.fetchWith ? this.fetchWith(url, init) : super.pushFetch(url, init);
  }
}

export class TestRelayLedger extends RelayLedger {
  /** Sets each kind's total in force (instead of the settings). */
  useTotals(totals: StorageTotals): void {
    this.totals = totals;
  }
}

export class TestRelayPolicy extends RelayPolicy {
  private held: Array<() => void> | null = null;
  /** RPC: snapshot() waits until releaseSnapshots() (the lists' object busy, or out of reach). */
  holdSnapshots(): void {
    this.held ??= [];
  }
  /** RPC: lets the held snapshots go on; returns how many there were. */
  releaseSnapshots(): number {
    const h = this.held ?? [];
    this.held = null;
    for (const r of h) r();
    return h.length;
  }
  async snapshot(): Promise<PolicySnapshot> {
    const held = this.held;
    if (held) await new Promise<void>((r) => held.push(r));
    return super.snapshot();
  }
}

/** Holds each join's check (until released), so a test can act while a join is being checked. */
class JoinHold {
  private held: Array<() => void> | null = null;
  hold(): void {
    this.held ??= [];
  }
  release(): number {
    const h = this.held ?? [];
    this.held = null;
    for (const r of h) r();
    return h.length;
  }
  get waiting(): number {
    return this.held?.length ?? 0;
  }
  async pass(): Promise<void> {
    const held = this.held;
    if (held) await new Promise<void>((r) => held.push(r));
  }
}

// Named as the production classes (their log lines name the class).
export const TestPassnoteRoom = class PassnoteRoom extends ProductionPassnoteRoom {
  private readonly joins = new JoinHold();
  /** While set, the time the rate limits read (a test feeding a flood holds it still). */
  frozenAt: number | undefined;
  /** RPC: joins wait before their check until releaseJoins(). */
  holdJoins(): void {
    this.joins.hold();
  }
  /** RPC: lets the held joins go on; returns how many there were. */
  releaseJoins(): number {
    return this.joins.release();
  }
  /** RPC: joins waiting. */
  heldJoins(): number {
    return this.joins.waiting;
  }
  protected async verifyJoin(room: string, challenge: string, sig: string): Promise<boolean> {
    await this.joins.pass();
    return super.verifyJoin(room, challenge, sig);
  }
  protected rateClock(): number {
    return this.frozenAt ?? super.rateClock();
  }
  /** RPC: closes with 4001 every socket past the authentication timeout as of `now`; returns how many. */
  closeUnauthenticated(now: number): number {
    return this.parked.closeExpired(now);
  }
};
export type TestPassnoteRoom = InstanceType<typeof TestPassnoteRoom>;

export const TestTallyUser = class TallyUser extends ProductionTallyUser {
  /** While set, the time the rate limits read (a test feeding a flood holds it still). */
  frozenAt: number | undefined;
  protected rateClock(): number {
    return this.frozenAt ?? super.rateClock();
  }
  /** RPC: closes with 4001 every socket past the authentication timeout as of `now`; returns how many. */
  closeUnauthenticated(now: number): number {
    return this.parked.closeExpired(now);
  }
};
export type TestTallyUser = InstanceType<typeof TestTallyUser>;

export const TestMincaRoom = class MincaRoom extends ProductionMincaRoom {
  private readonly joins = new JoinHold();
  /** While set, the time the rate limits and the parked sockets' grace read. */
  frozenAt: number | undefined;
  protected rateClock(): number {
    return this.frozenAt ?? super.rateClock();
  }
  holdJoins(): void {
    this.joins.hold();
  }
  releaseJoins(): number {
    return this.joins.release();
  }
  heldJoins(): number {
    return this.joins.waiting;
  }
  protected async checkJoin(msg: { did: string; sig: string }, room: string, challenge: string): Promise<boolean> {
    await this.joins.pass();
    return super.checkJoin(msg, room, challenge);
  }
};
export type TestMincaRoom = InstanceType<typeof TestMincaRoom>;
