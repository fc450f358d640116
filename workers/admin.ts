// The self-hosted relay's admin entrypoint. The generated workerd config binds it to a loopback
// socket of its own (never the public listener; on Cloudflare a named entrypoint is reachable only
// through a service binding, and none is declared), and scripts/serve.ts calls it on SIGTERM:
//
//   POST /drain   refuse new upgrades, close every client socket with 1001, answer
//                 { "objects": n, "sockets": m } once the closes are sent
//   GET  /status  { "live_objects": n, "draining": bool }
import { WorkerEntrypoint } from "cloudflare:workers";
import { isDraining, liveCount, setDraining, takeLive } from "../server/live";
import { CLOSE_CODES } from "../shared/limits";
import type { SocketBinding } from "./sockets";
import { log } from "../shared/log";

export class RelayAdmin extends WorkerEntrypoint<Env> {
  async fetch(req: Request): Promise<Response> {
    const { pathname } = new URL(req.url);
    if (req.method === "POST" && pathname === "/drain") return Response.json(await this.drain());
    if (req.method === "GET" && pathname === "/status") {
      return Response.json({ live_objects: liveCount(), draining: isDraining() });
    }
    return Response.json({ error: { code: "not_found", message: "POST /drain or GET /status" } }, { status: 404 });
  }

  private async drain(): Promise<{ objects: number; sockets: number }> {
    setDraining(true);
    const refs = takeLive();
    const counts = await Promise.allSettled(
      refs.map(({ id, binding }) => {
        const ns = this.env[binding as SocketBinding];
        return ns.get(ns.idFromString(id)).shutdownSockets(CLOSE_CODES.going_away, "relay shutting down");
      }),
    );
    let sockets = 0;
    for (const c of counts) {
      if (c.status === "fulfilled") sockets += c.value;
      else log.error("drain: an object failed to close its sockets", { err: c.reason });
    }
    return { objects: refs.length, sockets };
  }
}
