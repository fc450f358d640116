// Test subclasses of production objects (bound in place of them by test/worker/entry.ts): what a
// test injects (the fetch a mailbox's wakes go out with, the ledger's totals) and what it reads,
// kept out of the production classes.
import { MincaMailbox } from "../../durable-objects/mailbox/minca-mailbox";
import { RelayLedger } from "../../durable-objects/relay/relay-ledger";
import type { FetchLike } from "../../shared/webpush/send";
import type { StorageTotals } from "../../shared/storage";

export class TestMincaMailbox extends MincaMailbox {
  /** What this mailbox's wakes go out with (a test's push service); the runtime's fetch until set. */
  fetchWith: FetchLike | undefined;

  protected pushFetch(url: string, init: RequestInit): Promise<Response> {
    return this.fetchWith ? this.fetchWith(url, init) : super.pushFetch(url, init);
  }

  /** RPC: the receivers by id and endpoint. */
  receivers(): Array<{ id: string; endpoint: string }> {
    if (!this.schema.exists) return [];
    return this.sql.exec<{ id: string; endpoint: string }>("SELECT id, endpoint FROM receivers ORDER BY created_at").toArray();
  }
}

export class TestRelayLedger extends RelayLedger {
  /** Sets each kind's total in force (instead of the settings). */
  useTotals(totals: StorageTotals): void {
    this.totals = totals;
  }
}
