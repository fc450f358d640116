// A raw WebSocket that records what it receives, for protocol-level tests: `next(type)` waits
// for the next message of that type, `closed` resolves with the close code.
import { waitFor } from "./wait";

export class TestSocket {
  readonly messages: any[] = [];
  readonly binary: Uint8Array[] = [];
  private cursor = new Map<string, number>();
  closeCode: number | undefined;
  closeReason = "";
  readonly opened: Promise<void>;
  readonly closed: Promise<number>;

  constructor(readonly ws: WebSocket) {
    ws.binaryType = "arraybuffer";
    this.opened = new Promise((resolve, reject) => {
      if (ws.readyState === 1) resolve();
      ws.addEventListener("open", () => resolve());
      ws.addEventListener("error", () => reject(new Error("socket error before open")));
    });
    this.closed = new Promise((resolve) => {
      ws.addEventListener("close", (ev) => {
        this.closeCode = ev.code;
        this.closeReason = ev.reason;
        resolve(ev.code);
      });
    });
    ws.addEventListener("message", (ev) => {
      if (typeof ev.data === "string") this.messages.push(JSON.parse(ev.data));
      else this.binary.push(new Uint8Array(ev.data as ArrayBuffer));
    });
  }

  /** `headers`: request headers of the upgrade (Node's WebSocket takes them), e.g. a trusted proxy's client address. */
  static async open(url: string, headers?: Record<string, string>): Promise<TestSocket> {
    const s = new TestSocket(headers ? new WebSocket(url, { headers } as unknown as string[]) : new WebSocket(url));
    await s.opened;
    return s;
  }

  send(msg: unknown): void {
    this.ws.send(typeof msg === "string" ? msg : JSON.stringify(msg));
  }

  /** The next message of `type` not yet returned by next(type). */
  async next(type: string, timeout = 10_000): Promise<any> {
    const from = this.cursor.get(type) ?? 0;
    const found = await waitFor(
      () => {
        for (let i = from; i < this.messages.length; i++) if (this.messages[i].type === type) return { i };
        if (this.closeCode !== undefined) throw new Error(`socket closed (${this.closeCode} ${this.closeReason}) waiting for ${type}`);
        return undefined;
      },
      { timeout, what: `message ${type}` },
    );
    this.cursor.set(type, found.i + 1);
    return this.messages[found.i];
  }

  ofType(type: string): any[] {
    return this.messages.filter((m) => m.type === type);
  }

  close(code = 1000): void {
    this.ws.close(code);
  }
}
