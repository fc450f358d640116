// A note's policy (the Minca protocol §2.5; UCAN 1.0 policy language, the subset a host can judge): a list
// of statements, all of which must hold, over what a write touches: `.space` and `.collection`.
// Statements: ["==", sel, value], ["!=", sel, value], ["and", [..]], ["or", [..]], ["not", s].
// Anything else (another operator, another selector's value, deeper than 16) does not hold, so
// an unknown policy never lets a write through.

interface PolicySubject {
  space: string;
  collection: string;
}

const MAX_DEPTH = 16;

export function policyAllows(pol: readonly unknown[], subject: PolicySubject): boolean {
  return pol.every((s) => holds(s, subject, 0));
}

function select(sel: unknown, subject: PolicySubject): unknown {
  if (sel === ".space") return subject.space;
  if (sel === ".collection") return subject.collection;
  return undefined;
}

function holds(s: unknown, subject: PolicySubject, depth: number): boolean {
  if (depth > MAX_DEPTH || !Array.isArray(s) || typeof s[0] !== "string") return false;
  switch (s[0]) {
    case "==":
      return s.length === 3 && typeof s[2] === "string" && select(s[1], subject) === s[2];
    case "!=":
      return s.length === 3 && typeof s[2] === "string" && select(s[1], subject) !== undefined && select(s[1], subject) !== s[2];
    case "and":
      return s.length === 2 && Array.isArray(s[1]) && s[1].every((x) => holds(x, subject, depth + 1));
    case "or":
      return s.length === 2 && Array.isArray(s[1]) && s[1].some((x) => holds(x, subject, depth + 1));
    case "not":
      return s.length === 2 && Array.isArray(s[1]) && !holds(s[1], subject, depth + 1) && wellFormed(s[1], depth + 1);
    default:
      return false;
  }
}

/** Whether a statement is one this module knows (so `not` of nonsense is not taken as true). */
function wellFormed(s: unknown, depth: number): boolean {
  if (depth > MAX_DEPTH || !Array.isArray(s) || typeof s[0] !== "string") return false;
  switch (s[0]) {
    case "==":
    case "!=":
      return s.length === 3 && (s[1] === ".space" || s[1] === ".collection") && typeof s[2] === "string";
    case "and":
    case "or":
      return s.length === 2 && Array.isArray(s[1]) && s[1].every((x) => wellFormed(x, depth + 1));
    case "not":
      return s.length === 2 && wellFormed(s[1], depth + 1);
    default:
      return false;
  }
}

/** Whether a note's command covers `needed` (UCAN: "/" covers all, "/a" covers "/a/b"). */
export function commandCovers(cmd: string, needed: string): boolean {
  return cmd === "/" || cmd === needed || needed.startsWith(`${cmd}/`);
}
