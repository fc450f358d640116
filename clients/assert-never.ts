// The end of a switch over a union's `type`s: the compiler refuses the call while a member is not
// handled, so a new frame without its case is a type error. A value that reaches it at run time
// (it cannot, once a schema parsed it) is a program error.
export function assertNever(value: never, what = "value"): never {
  throw new Error(`unhandled ${what}: ${JSON.stringify(value)}`);
}
