// The code-channel exchanges as the tests drive them: what a test reads that an app never does (the
// check the program expects, which a person reads at the home instead; each side's point J, to
// compare exchanges), kept out of the SDK's classes.
import { HomeExchange } from "../../clients/minca/protocol/home";
import { ProgramExchange } from "../../clients/minca/protocol/program";

export class TestProgramExchange extends ProgramExchange {
  /** The check this side expects, once keys exist. */
  get expectedCheck(): string | undefined {
    return this.keys?.check;
  }

  /** This exchange's point J. */
  get ownPoint(): Uint8Array {
    return this.point.point;
  }
}

export class TestHomeExchange extends HomeExchange {
  /** This exchange's point J. */
  get ownPoint(): Uint8Array {
    return this.point.point;
  }
}
