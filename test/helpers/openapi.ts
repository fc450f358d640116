// Reading the relay's OpenAPI document (server/openapi.ts) as a client would: which operation a
// request is, and whether an answer is one the document promises (its status, its content type,
// and its body under the JSON Schema given for them, checked with zod's fromJSONSchema).
import * as z from "zod";

export type Doc = { openapi: string; paths: Record<string, Record<string, Json>>; components: Record<string, Record<string, Json>> };
type Json = Record<string, unknown>;

export const METHODS = ["get", "post", "delete", "put", "patch", "head", "options"] as const;

/** `node` with every local `$ref` ("#/components/...") replaced by what it points at. */
export function resolveRefs(doc: Doc, node: unknown): unknown {
  if (Array.isArray(node)) return node.map((n) => resolveRefs(doc, n));
  if (node === null || typeof node !== "object") return node;
  const o = node as Json;
  if (typeof o.$ref === "string") {
    const target = o.$ref
      .replace(/^#\//, "")
      .split("/")
      .reduce<unknown>((at, key) => (at as Json | undefined)?.[key], doc);
    if (target === undefined) throw new Error(`unresolved $ref ${o.$ref}`);
    return resolveRefs(doc, target);
  }
  return Object.fromEntries(Object.entries(o).map(([k, v]) => [k, resolveRefs(doc, v)]));
}

/** Every local $ref in the document, with whether it resolves. */
export function danglingRefs(doc: Doc): string[] {
  const out: string[] = [];
  const walk = (n: unknown) => {
    if (Array.isArray(n)) return n.forEach(walk);
    if (n === null || typeof n !== "object") return;
    for (const [k, v] of Object.entries(n)) {
      if (k === "$ref" && typeof v === "string") {
        try {
          resolveRefs(doc, { $ref: v });
        } catch {
          out.push(v);
        }
      } else walk(v);
    }
  };
  walk(doc);
  return out;
}

/** The document's path template that a concrete path is, e.g. /minca/v1/mailbox/{topic} for /minca/v1/mailbox/abc... */
export function templateOf(doc: Doc, path: string): string | undefined {
  const exact = Object.keys(doc.paths).find((t) => t === path);
  if (exact) return exact;
  return Object.keys(doc.paths).find((t) => {
    if (!t.includes("{")) return false;
    const re = new RegExp(`^${t.replace(/[.*+?^$()|[\]\\]/g, "\\$&").replace(/\{[^}]+\}/g, "[^/]+")}$`);
    return re.test(path);
  });
}

export interface Answer {
  method: string;
  path: string;
  status: number;
  contentType: string | null;
  body: string;
}

/**
 * Why an answer is not what the document promises, or null when it is: the path and method are
 * an operation, the status is one of its responses, and the body, when the response has content,
 * is of a listed media type and valid under its schema.
 */
export function answerProblem(doc: Doc, a: Answer): string | null {
  const where = `${a.method} ${a.path} -> ${a.status}`;
  const template = templateOf(doc, a.path);
  if (!template) return `${where}: no path in the document`;
  const op = doc.paths[template][a.method.toLowerCase()] as Json | undefined;
  if (!op) return `${where}: no ${a.method} on ${template}`;
  const response = (op.responses as Record<string, Json>)[String(a.status)];
  if (!response) return `${where}: status not listed for ${a.method} ${template}`;
  const content = resolveRefs(doc, response.content) as Record<string, { schema?: unknown }> | undefined;
  if (!content) return a.body === "" ? null : `${where}: the document lists no body, the answer has one`;
  const media = (a.contentType ?? "").split(";")[0].trim();
  const listed = content[media];
  if (!listed) return `${where}: content type ${media} not among ${Object.keys(content).join(", ")}`;
  // Binary bodies (a mailbox item) are opaque: their media type is what the document promises.
  if (!listed.schema || !(media === "application/json" || media.startsWith("text/"))) return null;
  const schema = z.fromJSONSchema(listed.schema as Parameters<typeof z.fromJSONSchema>[0]);
  let value: unknown = a.body;
  if (media === "application/json") value = JSON.parse(a.body);
  const r = schema.safeParse(value);
  return r.success ? null : `${where}: body not valid: ${JSON.stringify(r.error.issues.slice(0, 3))} in ${a.body.slice(0, 300)}`;
}

/** A fetch that keeps every answer it gets (bodies read from a clone) in `answers`. */
export function recordingFetch(answers: Answer[]): typeof fetch {
  return async (input, init) => {
    const req = new Request(input, init);
    const res = await fetch(req);
    const bytes = new Uint8Array(await res.clone().arrayBuffer());
    const contentType = res.headers.get("content-type");
    const body = /json|text/.test(contentType ?? "") ? new TextDecoder().decode(bytes) : bytes.length ? `<${bytes.length} bytes>` : "";
    answers.push({ method: req.method, path: new URL(req.url).pathname, status: res.status, contentType, body });
    return res;
  };
}

/** Every operation of the document as "METHOD template". */
export function operations(doc: Doc): string[] {
  return Object.entries(doc.paths).flatMap(([t, item]) => METHODS.filter((m) => item[m]).map((m) => `${m.toUpperCase()} ${t}`));
}
