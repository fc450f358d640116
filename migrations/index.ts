// The SQL migrations of every Durable Object class, in the order they apply. Each class has a
// folder of numbered .sql files; a unit test checks that every file there is listed here. A class
// with more than one migration also has `current.sql`: its schema as the migrations leave it,
// which a fresh object applies in one step (durable-objects/base/schema.ts; a worker test,
// test/worker/schema-current.test.ts, keeps it equal to the migrations applied one by one). A new
// migration regenerates it (the test prints the schema it expects).
import tallyUser0001 from "./TallyUser/0001_init.sql";
import tallyUser0002 from "./TallyUser/0002_contacts.sql";
import tallyUser0003 from "./TallyUser/0003_queue_one_row.sql";
import tallyUser0004 from "./TallyUser/0004_keyed_tables.sql";
import passnoteRoom0001 from "./PassnoteRoom/0001_init.sql";
import mincaRoom0001 from "./MincaRoom/0001_init.sql";
import mincaMailbox0001 from "./MincaMailbox/0001_init.sql";
import relayKeys0001 from "./RelayKeys/0001_init.sql";
import mincaMailbox0002 from "./MincaMailbox/0002_links.sql";
import mincaAccount0001 from "./MincaAccount/0001_init.sql";
import mincaSpace0001 from "./MincaSpace/0001_init.sql";
import relayStats0001 from "./RelayStats/0001_init.sql";
import mincaAccount0002 from "./MincaAccount/0002_revocations.sql";
import mincaSpace0002 from "./MincaSpace/0002_own.sql";
import relayStats0002 from "./RelayStats/0002_storage.sql";
import relayLedger0001 from "./RelayLedger/0001_init.sql";
import relayLedger0002 from "./RelayLedger/0002_audit.sql";
import mincaAccount0003 from "./MincaAccount/0003_keeping.sql";
import mincaSpace0003 from "./MincaSpace/0003_slots.sql";
import mincaRoom0002 from "./MincaRoom/0002_meta.sql";
import relayKeys0002 from "./RelayKeys/0002_meta.sql";
import relayStats0003 from "./RelayStats/0003_meta.sql";
import relayStats0004 from "./RelayStats/0004_totals.sql";
import relayStats0005 from "./RelayStats/0005_usage.sql";
import relayStats0006 from "./RelayStats/0006_one_row_per_report_part.sql";
import relayStats0007 from "./RelayStats/0007_keyed_reporters.sql";
import relayLedger0003 from "./RelayLedger/0003_meta.sql";
import relayPolicy0001 from "./RelayPolicy/0001_init.sql";
import relayLedger0004 from "./RelayLedger/0004_held.sql";
import relayLedger0005 from "./RelayLedger/0005_audited.sql";
import relayLedger0006 from "./RelayLedger/0006_keyed_leases.sql";
import mincaAccountCurrent from "./MincaAccount/current.sql";
import mincaMailboxCurrent from "./MincaMailbox/current.sql";
import mincaRoomCurrent from "./MincaRoom/current.sql";
import mincaSpaceCurrent from "./MincaSpace/current.sql";
import relayKeysCurrent from "./RelayKeys/current.sql";
import relayLedgerCurrent from "./RelayLedger/current.sql";
import relayStatsCurrent from "./RelayStats/current.sql";
import tallyUserCurrent from "./TallyUser/current.sql";

export interface Migration {
  name: string;
  sql: string;
}

export const MIGRATIONS = {
  TallyUser: [
    { name: "0001_init", sql: tallyUser0001 },
    { name: "0002_contacts", sql: tallyUser0002 },
    { name: "0003_queue_one_row", sql: tallyUser0003 },
    { name: "0004_keyed_tables", sql: tallyUser0004 },
  ],
  PassnoteRoom: [{ name: "0001_init", sql: passnoteRoom0001 }],
  MincaRoom: [
    { name: "0001_init", sql: mincaRoom0001 },
    { name: "0002_meta", sql: mincaRoom0002 },
  ],
  MincaMailbox: [
    { name: "0001_init", sql: mincaMailbox0001 },
    { name: "0002_links", sql: mincaMailbox0002 },
  ],
  RelayKeys: [
    { name: "0001_init", sql: relayKeys0001 },
    { name: "0002_meta", sql: relayKeys0002 },
  ],
  MincaAccount: [
    { name: "0001_init", sql: mincaAccount0001 },
    { name: "0002_revocations", sql: mincaAccount0002 },
    { name: "0003_keeping", sql: mincaAccount0003 },
  ],
  MincaSpace: [
    { name: "0001_init", sql: mincaSpace0001 },
    { name: "0002_own", sql: mincaSpace0002 },
    { name: "0003_slots", sql: mincaSpace0003 },
  ],
  RelayStats: [
    { name: "0001_init", sql: relayStats0001 },
    { name: "0002_storage", sql: relayStats0002 },
    { name: "0003_meta", sql: relayStats0003 },
    { name: "0004_totals", sql: relayStats0004 },
    { name: "0005_usage", sql: relayStats0005 },
    { name: "0006_one_row_per_report_part", sql: relayStats0006 },
    { name: "0007_keyed_reporters", sql: relayStats0007 },
  ],
  RelayLedger: [
    { name: "0001_init", sql: relayLedger0001 },
    { name: "0002_audit", sql: relayLedger0002 },
    { name: "0003_meta", sql: relayLedger0003 },
    { name: "0004_held", sql: relayLedger0004 },
    { name: "0005_audited", sql: relayLedger0005 },
    { name: "0006_keyed_leases", sql: relayLedger0006 },
  ],
  RelayPolicy: [{ name: "0001_init", sql: relayPolicy0001 }],
} satisfies Record<string, Migration[]>;

export type MigratedClass = keyof typeof MIGRATIONS;

/** Each class's schema as its migrations leave it (a fresh object applies it in one step). */
const CURRENT = new Map<readonly Migration[], string>([
  [MIGRATIONS.MincaAccount, mincaAccountCurrent],
  [MIGRATIONS.MincaMailbox, mincaMailboxCurrent],
  [MIGRATIONS.MincaRoom, mincaRoomCurrent],
  [MIGRATIONS.MincaSpace, mincaSpaceCurrent],
  [MIGRATIONS.RelayKeys, relayKeysCurrent],
  [MIGRATIONS.RelayLedger, relayLedgerCurrent],
  [MIGRATIONS.RelayStats, relayStatsCurrent],
  [MIGRATIONS.TallyUser, tallyUserCurrent],
]);

/** The schema the migrations `migrations` leave, in one script; undefined for a class whose one migration is it. */
export function currentSchema(migrations: readonly Migration[]): string | undefined {
  return CURRENT.get(migrations);
}
