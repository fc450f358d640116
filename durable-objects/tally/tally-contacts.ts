// Whom one Tally user's devices may meet and whom they met (docs/tally.md, the Tally protocol section
// 13): the user's contacts (the users it exchanged envelopes with, which decide who gets presence
// and signals, and whose envelopes a full queue keeps: tally-queue.ts) and the introductions of its
// online devices to other users' devices (which decide who hears peer_disconnect). The `contacts` and `introductions` tables' only reader and writer;
// TallyUser (tally-user.ts) sends the frames and makes the calls to other users' objects.
import { TALLY_LIMITS } from "../../shared/limits";
import { rowBytes } from "../../shared/storage";
import type { LazySchema } from "../base/schema";
import type { StorageLease } from "../relay/storage-lease";

/** What one contact row charges the relay-wide Tally total: a row of a 64-hex key and its flags. */
export const CONTACT_ROW_BYTES = rowBytes(64);

export class TallyContacts {
  private readonly sql: SqlStorage;
  /** The contacts table, read once per instance (it changes only through noteContact). */
  private contacts: Map<string, { sent: boolean; received: boolean }> | undefined;

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

  // ---- contacts: who exchanged envelopes with this user ----------------------------------------

  /**
   * Notes that this user sent an envelope to, or received one from, `peerHex` (written once per
   * flag). A new contact's row is charged against the user's lease of the Tally total, checked
   * and written in one step (storage-lease.ts); with the total full it is not kept (false), and
   * the next envelope exchanged notes it again.
   */
  async noteContact(peerHex: string, how: "sent" | "received"): Promise<boolean> {
    const map = this.contactMap();
    const had = map.get(peerHex);
    if (had?.[how]) return true;
    const write = () =>
      this.sql.exec(
        `INSERT INTO contacts (peer_hex, ${how}, at) VALUES (?, 1, ?) ON CONFLICT (peer_hex) DO UPDATE SET ${how} = 1, at = excluded.at`,
        peerHex,
        Date.now(),
      );
    if (had) {
      write(); // the row exists: a flag more costs nothing
      had[how] = true;
      return true;
    }
    const r = await this.lease.store(CONTACT_ROW_BYTES, () => {
      write();
      // Bounded per user: the oldest contact goes (its row's charge with it), one this user never
      // wrote to first, so that strangers sending by the thousand cannot make it forget whom it
      // wrote to (those protect their senders' stored envelopes, tally-queue.ts).
      const n = this.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM contacts").one().n;
      const old =
        n > TALLY_LIMITS.max_contacts_per_user
          ? this.sql.exec<{ peer_hex: string }>("SELECT peer_hex FROM contacts ORDER BY sent, at LIMIT 1").one().peer_hex
          : null;
      if (old !== null) this.sql.exec("DELETE FROM contacts WHERE peer_hex = ?", old);
      return { value: old, held: this.held() };
    });
    if (!r.stored) return false;
    const now = map.get(peerHex) ?? { sent: false, received: false };
    now[how] = true;
    map.set(peerHex, now);
    if (r.value !== null) map.delete(r.value);
    return true;
  }

  /** An envelope exchange: this user both sent to and received from `peerHex`. */
  isContact(peerHex: string): boolean {
    const c = this.contactMap().get(peerHex);
    return c?.sent === true && c.received;
  }

  /**
   * This user has sent `peerHex` an envelope (through this relay): the user's own doing, which no
   * one else can bring about. Its envelopes to this user are never evicted for a stranger's
   * (server/tally/queue-bounds.ts).
   */
  wroteTo(peerHex: string): boolean {
    return this.contactMap().get(peerHex)?.sent === true;
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

  private contactMap(): Map<string, { sent: boolean; received: boolean }> {
    if (!this.contacts) {
      this.contacts = new Map();
      if (!this.schema.exists) return this.contacts;
      for (const r of this.sql.exec<{ peer_hex: string; sent: number; received: number }>(
        "SELECT peer_hex, sent, received FROM contacts",
      )) {
        this.contacts.set(r.peer_hex, { sent: r.sent === 1, received: r.received === 1 });
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
