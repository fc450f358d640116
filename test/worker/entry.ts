// The Worker as the worker tests run it: production's Worker and classes, with test subclasses of
// the objects whose outside world a test sets (test/worker/test-objects.ts). Production classes
// carry no test hooks.
export * from "../../workers/index";
export { default } from "../../workers/index";
export {
  TestMincaAccount as MincaAccount,
  TestMincaMailbox as MincaMailbox,
  TestMincaRoom as MincaRoom,
  TestPassnoteRoom as PassnoteRoom,
  TestRelayLedger as RelayLedger,
  TestRelayPolicy as RelayPolicy,
  TestTallyUser as TallyUser,
} from "./test-objects";
