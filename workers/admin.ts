// The self-hosted relay's admin entrypoint. The generated workerd config binds it to a loopback
// socket of its own (never the public listener; on Cloudflare a named entrypoint is reachable only
// through a service binding, and none is declared), and scripts/serve.ts calls it on SIGTERM:
//
//   POST /drain   refuse new upgrades, close every client socket with 1001, answer
//                 { "objects": n, "sockets": m } once the closes are sent
//   POST /crowded { "crowded": bool, "open_files": n, "limit": n }: the launcher's word that the
//                 runtime's descriptors are near (or again clear of) its open-file limit; while
//                 crowded, new upgrades are refused (503). Answers { "crowded": bool }
//   GET  /status  { "live_objects": n, "draining": bool, "crowded": bool }
import { WorkerEntrypoint } from "cloudflare:workers";
import * as z from "zod";
import { isCrowded, isDraining, liveCount, setCrowded, setDraining, takeLive } from "../server/live";
import { CLOSE_CODES } from "../shared/limits";
import { httpErrorBody } from "../shared/errors";
import type { SocketBinding } from "./sockets";
import { log } from "../server/log";

const CrowdedBody = z.object({
  crowded: z.boolean(),
  open_files: z.number().int().nonnegative(),
  limit: z.number().int().positive(),
});

export class RelayAdmin extends WorkerEntrypoint<Env> {
  async fetch(req: Request): Promise<Response> {
    const { pathname } = new URL(req.url);
    if (req.method === "POST" && pathname === "/drain") return Response.json(await this.drain());
    if (req.method === "GET" && pathname === "/status") {
      return Response.json({ live_objects: liveCount(), draining: isDraining(), crowded: isCrowded() });
    }
    if (req.method === "POST" && pathname === "/crowded") return this.crowded(req);
    return Response.json(httpErrorBody("not_found", "POST /drain, POST /crowded or GET /status"), { status: 404 });
  }

  private async crowded(req: Request): Promise<Response> {
    const body = CrowdedBody.safeParse(await req.json().catch(() => null));
    if (!body.success)
      return Response.json(httpErrorBody("bad_request", 'expected { "crowded": bool, "open_files": n, "limit": n }'), { status: 400 });
    const { crowded, open_files, limit } = body.data;
    if (crowded !== isCrowded()) {
      setCrowded(crowded);
      if (crowded)
        log.warn("near the open-file limit: new connections are refused (503) until descriptors are freed", { open_files, limit });
      else log.info("clear of the open-file limit again: new connections are taken", { open_files, limit });
    }
    return Response.json({ crowded: isCrowded() });
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
