// GET /svc/handles (the live session names) and DELETE /svc/handles/{name} (release one now, or after the
// request using it ends). With sessions off both still answer, saying so, so a client can tell "off" from "empty".

import type {FastifyInstance} from "fastify";
import {ApiError} from "../../core/errors.ts";
import type {HandleRegistry} from "../../sessions/handles.ts";
import {checkSessionName} from "../fields/session-headers.ts";

const OFF_MESSAGE = "session handles are off on this server; SVC_FORK=1 turns them on";

export function registerHandleRoutes(app: FastifyInstance, handles: HandleRegistry | null): void {
  app.get("/svc/handles", async () => {
    // A reply sent with X-Svc-Keep is answered before its state is sealed and written: wait for those keeps.
    await handles?.keepsSettled();
    return {
      object: "list",
      enabled: handles !== null,
      max: handles?.maxHandles ?? null,
      data: handles?.list() ?? [],
    };
  });

  app.delete<{Params: {name: string}}>("/svc/handles/:name", async (req) => {
    if (handles === null) throw new ApiError("not_found", OFF_MESSAGE);
    const name = checkSessionName(req.params.name, "name");
    const outcome = handles.delete(name);
    if (outcome === "unknown") throw new ApiError("not_found", `no live session handle named "${name}"`);
    return {name, released: true, pending: outcome === "pending"};
  });
}
