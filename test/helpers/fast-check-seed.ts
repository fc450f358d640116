// Every property test runs with a fixed seed (FC_SEED overrides it to explore), so a run of the
// suite is repeatable; tests that pass their own seed keep it.
import fc from "fast-check";

fc.configureGlobal({ seed: Number(process.env.FC_SEED ?? 20261202) });
