// vitest globalSetup for the end-to-end layer: one relay process shared by the suite.
import type { TestProject } from "vitest/node";
import { buildWorker } from "../../scripts/build";
import { relayTarget, startRelay, type RelayProcess } from "./relay-process";

let relay: RelayProcess | undefined;

export async function setup(project: TestProject): Promise<void> {
  // The workerd target runs the bundle `npm start` builds; build it once for the whole run (unless
  // scripts/test-e2e-lanes.ts built it already, for both of its lanes).
  if (relayTarget() === "workerd" && process.env.RELAY_BUNDLE_BUILT !== "1") buildWorker();
  relay = await startRelay();
  project.provide("relayUrl", relay.url);
  project.provide("relayTarget", relay.target);
}

export async function teardown(): Promise<void> {
  await relay?.stop();
}

declare module "vitest" {
  export interface ProvidedContext {
    relayUrl: string;
    relayTarget: string;
  }
}
