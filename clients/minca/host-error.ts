// What a Minca host answers that more than one part of the SDK reads: a refusal as an error, and
// a version's result. Kept apart from host.ts so that the parts host.ts uses (sign-out.ts) need not
// import it back.

/** A host's refusal: the HTTP status and the relay's error code. */
export class HostError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** One version's answer from a host. */
export type VersionResult = { id: string; accepted: true; seq: number } | { id?: string; accepted: false; reason: string };
