// A push service on loopback for end-to-end tests: it hands out subscriptions, checks each push's
// VAPID JWT and decrypts its body with the independent Node implementation, and answers with the
// status a test sets (201 by default; 410 to say the subscription is gone).
import { createServer, type Server } from "node:http";
import { nodeDecrypt, nodeSubscription, nodeVerifyVapid, type NodeSubscription, type VapidCheck } from "./webpush-node";

export interface ReceivedPush {
  id: string;
  headers: Record<string, string>;
  body: Buffer;
  /** The decrypted plaintext, or the reason it failed. */
  plaintext?: Buffer;
  vapid?: VapidCheck;
  error?: string;
  answered: number;
}

export class LocalPushService {
  readonly received: ReceivedPush[] = [];
  private readonly subs = new Map<string, NodeSubscription>();
  private readonly answers = new Map<string, Array<{ status: number; headers?: Record<string, string> }>>();
  private seq = 0;

  private constructor(
    private readonly server: Server,
    readonly origin: string,
  ) {}

  static async start(): Promise<LocalPushService> {
    let self: LocalPushService | undefined;
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        const { status, headers } = self!.handle(
          req.url ?? "",
          req.method ?? "",
          req.headers as Record<string, string>,
          Buffer.concat(chunks),
        );
        res.writeHead(status, headers);
        res.end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const addr = server.address();
    const port = typeof addr === "object" && addr ? addr.port : 0;
    self = new LocalPushService(server, `http://127.0.0.1:${port}`);
    return self;
  }

  /** A new subscription on this service, with its keys (toJSON() shape in `.json`). */
  subscribe(): { id: string; json: { endpoint: string; keys: { p256dh: string; auth: string } }; sub: NodeSubscription } {
    const id = `s${++this.seq}-${Math.random().toString(36).slice(2, 10)}`;
    const sub = nodeSubscription(`${this.origin}/push/${id}`);
    this.subs.set(id, sub);
    return { id, json: { endpoint: sub.endpoint, keys: sub.keys }, sub };
  }

  /** The statuses the next pushes to `id` get, in order (then 201). */
  answer(id: string, ...answers: Array<{ status: number; headers?: Record<string, string> }>): void {
    this.answers.set(id, answers);
  }

  pushesTo(id: string): ReceivedPush[] {
    return this.received.filter((p) => p.id === id);
  }

  private handle(url: string, method: string, headers: Record<string, string>, body: Buffer) {
    const m = /^\/push\/([\w-]+)$/.exec(url);
    const sub = m ? this.subs.get(m[1]) : undefined;
    if (method !== "POST" || !m || !sub) return { status: 404 };
    const queued = this.answers.get(m[1]);
    const answer = queued?.shift() ?? { status: 201 };
    const got: ReceivedPush = { id: m[1], headers, body, answered: answer.status };
    try {
      got.vapid = nodeVerifyVapid(headers.authorization ?? "", this.origin);
      if (headers["content-encoding"] !== "aes128gcm") throw new Error("Content-Encoding is not aes128gcm");
      got.plaintext = nodeDecrypt(body, sub);
    } catch (e) {
      got.error = String(e);
    }
    this.received.push(got);
    if (got.error && answer.status === 201) return { status: 400 };
    return { status: answer.status, headers: { location: `${this.origin}/message/${this.received.length}`, ...answer.headers } };
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
