// The one-time code of the Minca protocol section 3: "mc_" + base64url of a 16-byte CSPRNG secret, the
// connect-page link that carries it in the fragment, reading it back out of typed text, and the
// room both sides meet in.
import { ID_PATTERN, mincaId } from "./id";
import { base64urlDecode, base64urlEncode, concatBytes, randomBytes, utf8Encode } from "../encoding";

const CODE_PREFIX = "mc_";
const CODE_SECRET_BYTES = 16;
/** Characters of the base64url secret after the prefix. */
const CODE_SECRET_CHARS = 22;
const ROOM_LABEL = "minca/code-room/v1";
/** The shape of a room id: "b" + lowercase unpadded base32 of a SHA-256 hash. */
export const ROOM_ID_PATTERN = ID_PATTERN;

export class CodeError extends Error {}

/** A new code: fresh CSPRNG bytes every time (the program MUST make one per connection). */
export function newCode(): string {
  return CODE_PREFIX + base64urlEncode(randomBytes(CODE_SECRET_BYTES));
}

/** The 16 secret bytes of a code; throws CodeError for anything but a well-formed code. */
export function codeSecret(code: string): Uint8Array {
  if (typeof code !== "string" || !code.startsWith(CODE_PREFIX) || code.length !== CODE_PREFIX.length + CODE_SECRET_CHARS) {
    throw new CodeError("not a code");
  }
  let secret: Uint8Array;
  try {
    secret = base64urlDecode(code.slice(CODE_PREFIX.length));
  } catch {
    throw new CodeError("code is not base64url");
  }
  if (secret.length !== CODE_SECRET_BYTES) throw new CodeError("code is not 16 bytes");
  return secret;
}

export function codeFromSecret(secret: Uint8Array): string {
  if (secret.length !== CODE_SECRET_BYTES) throw new CodeError("a code's secret is 16 bytes");
  return CODE_PREFIX + base64urlEncode(secret);
}

const CODE_IN_TEXT = /mc_([A-Za-z0-9_-]{22})(?![A-Za-z0-9_-])/g;

/**
 * The code in a link or typed text (the Minca protocol §3): the first match of mc_ and 22 base64url
 * characters that is not followed by another base64url character and decodes to 16 bytes.
 * Null when there is none.
 */
export function readCode(text: string): string | null {
  if (typeof text !== "string") return null;
  for (const m of text.matchAll(CODE_IN_TEXT)) {
    try {
      codeSecret(m[0]);
      return m[0];
    } catch {
      // not 16 bytes: look further
    }
  }
  return null;
}

/** A home's connect page from its origin or bare domain (the Minca protocol §2.2): <origin>/connect. */
export function connectPage(home: string): string {
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(home) ? home : `https://${home}`;
  const url = new URL(withScheme);
  return `${url.origin}/connect`;
}

/** The origin of a home given as a bare domain, origin or connect page. */
export function homeOrigin(home: string): string {
  return new URL(connectPage(home)).origin;
}

/** The link the program opens or shows: the connect page with the code as its fragment. */
export function codeLink(home: string, code: string): string {
  codeSecret(code);
  return `${connectPage(home)}#${code}`;
}

/** The code-channel room of a secret: "b" + base32(SHA-256(UTF-8("minca/code-room/v1") ‖ secret)). */
export function codeRoom(secret: Uint8Array): string {
  return mincaId(concatBytes(utf8Encode(ROOM_LABEL), secret));
}

export function isRoomId(s: unknown): s is string {
  return typeof s === "string" && ROOM_ID_PATTERN.test(s);
}
