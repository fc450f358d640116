// Whom one Tally user's devices may meet and whom they met (docs/tally.md, the Tally protocol section
// 13): the user's contacts (the users it wrote to, which decide who hears `delivered`, whose
// presence and signals reach it, and whose envelopes a full queue keeps: tally-queue.ts) and the
// introductions of its online devices to other users' devices (which decide who hears
// peer_disconnect). The `contacts` and `introductions` tables' only reader and writer; TallyUser
// (tally-user.ts) sends the frames and makes the calls to other users' objects.
// A contact is kept by the user who wrote, only: receiving an envelope writes nothing (an online
// delivery between users who never wrote to each other before keeps nothing at the recipient).
// An exchange (both wrote), which signaling asks for, is checked by each side for its own part.
import { TALLY_LIMITS } from "../../shared/limits";
import { rowBytes } from "../../shared/storage";
import type { LazySchema } from "../base/schema";
import type { StorageLease } from "../relay/storage-lease";

/** What one contact row charges the relay-wide Tally total: a row of a 64-hex key and its flags. */
export const CONTACT_ROW_BYTES = rowBytes(64);

export class TallyContacts {
  private readonly sql: SqlStorage;
  /** The contacts table, read once per instance (it changes only through noteContact). */
  private contacts: Map<string, { sent: boolean }> | undefined;

  constructor(
    ctx: DurableObjectState,
    private readonly schema: LazySchema,
    /** The user's lease of the Tally total (the queue's): a new contact row is charged through it. */
    private readonly lease: StorageLease,
    /** What the user holds against that total (tally-queue.ts held()). */
    private readonly held: () => number,
  ) {
    this.sql = ctx.storage.sql;
  }

  // ---- contacts: whom this user wrote to ------------------------------------------------------

  /** Notes of a new contact under way (its lease at the ledger): envelopes sent meanwhile join them. */
  private readonly noting = new Map<string, Promise<boolean>>();

  /**
   * Notes that this user sent an envelope to `peerHex` (written once). A new contact's row is
   * charged against the user's lease of the Tally total, checked and written in one step
   * (storage-lease.ts); with the total full it is not kept (false), and the next envelope sent
   * notes it again. Envelopes sent while the first note waits on the ledger join it: one row,
   * one charge.
   */
  noteContact(peerHex: string): Promise<boolean> {
    if (this.wroteTo(peerHex)) return Promise.resolve(true);
    const under = this.noting.get(peerHex);
    if (under) return under;
    const note = this.noteNew(peerHex).finally(() => this.noting.delete(peerHex));
    this.noting.set(peerHex, note);
    return note;
  }

  private async noteNew(peerHex: string): Promise<boolean> {
    const map = this.contactMap();
    const write = () =>
      this.sql.exec(
        "INSERT INTO contacts (peer_hex, sent, at) VALUES (?, 1, ?) ON CONFLICT (peer_hex) DO UPDATE SET sent = 1, at = excluded.at",
        peerHex,
        Date.now(),
      );
    if (map.has(peerHex)) {
      write(); // a row of an earlier version (an envelope received only): a flag more costs nothing
      map.set(peerHex, { sent: true });
      return true;
    }
    const r = await this.lease.store(CONTACT_ROW_BYTES, () => {
      write();
      // Bounded per user: the oldest contact goes (its row's charge with it); a row an earlier
      // version kept for an envelope received only goes first.
      const n = this.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM contacts").one().n;
      const old =
        n > TALLY_LIMITS.max_contacts_per_user
          ? this.sql.exec<{ peer_hex: string }>("SELECT peer_hex FROM contacts ORDER BY sent, at LIMIT 1").one().peer_hex
          : null;
      if (old !== null) this.sql.exec("DELETE FROM contacts WHERE peer_hex = ?", old);
      return { value: old, held: this.held() };
    });
    if (!r.stored) return false;
    map.set(peerHex, { sent: true });
    if (r.value !== null) map.delete(r.value);
    return true;
  }

  /**
   * This user has sent `peerHex` an envelope (through this relay): the user's own doing, which no
   * one else can bring about. Its envelopes to this user are never evicted for a stranger's
   * (server/tally/queue-bounds.ts), it hears `delivered` from this user's object, and this user's
   * devices may be introduced to it and get its signals (tally-signaling.ts).
   */
  wroteTo(peerHex: string): boolean {
    return this.contactMap().get(peerHex)?.sent === true;
  }

  /** Whether this user wrote to `peerHex`, or its note is under way (an envelope sent a moment ago). */
  wroteOrNoting(peerHex: string): boolean {
    return this.wroteTo(peerHex) || this.noting.has(peerHex);
  }

  /** wroteTo(), once a note of `peerHex` under way (an envelope sent a moment ago, its lease at the ledger) is done. */
  async wroteToNoted(peerHex: string): Promise<boolean> {
    await this.noting.get(peerHex)?.catch(() => false);
    return this.wroteTo(peerHex);
  }

  /** The users this user has sent an envelope to (whose queues may hold its envelopes). */
  sentTo(): string[] {
    return [...this.contactMap()].filter(([, c]) => c.sent).map(([hex]) => hex);
  }

  /** Forgets every contact (the operator banned this user); their rows' charge goes back. */
  forgetAll(): void {
    this.contacts = new Map();
    if (!this.schema.exists || this.sql.exec("SELECT 1 FROM contacts LIMIT 1").toArray().length === 0) return;
    this.lease.free(() => this.sql.exec("DELETE FROM contacts"));
  }

  private contactMap(): Map<string, { sent: boolean }> {
    if (!this.contacts) {
      this.contacts = new Map();
      if (!this.schema.exists) return this.contacts;
      for (const r of this.sql.exec<{ peer_hex: string; sent: number }>("SELECT peer_hex, sent FROM contacts")) {
        this.contacts.set(r.peer_hex, { sent: r.sent === 1 });
      }
    }
    return this.contacts;
  }

  // ---- introductions: which of our devices met which of theirs ---------------------------------

  /** Device `deviceId` of this user met `peerDevice` of `peerHex` (at most max_introductions_per_device each). */
  addIntroduction(deviceId: string, peerHex: string, peerDevice: string): void {
    this.schema.ensure(); // kept only for a registered device, while it is online
    const count = this.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM introductions WHERE device_id = ?", deviceId).one().n;
    if (count >= TALLY_LIMITS.max_introductions_per_device) return;
    this.sql.exec("INSERT OR IGNORE INTO introductions (device_id, peer_hex, peer_device) VALUES (?, ?, ?)", deviceId, peerHex, peerDevice);
  }

  /** Device `deviceId` has gone: its introductions go, answered as the peer devices to tell, by user. */
  takeIntroductions(deviceId: string): Map<string, string[]> {
    const byPeer = new Map<string, string[]>();
    if (!this.schema.exists) return byPeer;
    const rows = this.sql
      .exec<{ peer_hex: string; peer_device: string }>("SELECT peer_hex, peer_device FROM introductions WHERE device_id = ?", deviceId)
      .toArray();
    if (rows.length > 0) this.sql.exec("DELETE FROM introductions WHERE device_id = ?", deviceId);
    for (const r of rows) byPeer.set(r.peer_hex, [...(byPeer.get(r.peer_hex) ?? []), r.peer_device]);
    return byPeer;
  }

  /** `peerDevice` of `peerHex`, introduced to our `deviceId`, has gone. */
  forgetIntroduction(deviceId: string, peerHex: string, peerDevice: string): void {
    if (!this.schema.exists) return;
    this.sql.exec("DELETE FROM introductions WHERE device_id = ? AND peer_hex = ? AND peer_device = ?", deviceId, peerHex, peerDevice);
  }

  /** Forgets introductions of devices that are no longer connected (after a restart, say). */
  pruneIntroductions(liveDeviceIds: string[]): void {
    if (!this.schema.exists) return;
    const stale = `FROM introductions WHERE device_id NOT IN (${liveDeviceIds.map(() => "?").join(",") || "''"})`;
    if (this.sql.exec(`SELECT 1 ${stale} LIMIT 1`, ...liveDeviceIds).toArray().length === 0) return;
    this.sql.exec(`DELETE ${stale}`, ...liveDeviceIds);
  }
}
