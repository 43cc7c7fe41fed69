// POST /v1/chat/completions when `model` names a side model: decider ids answer decisions, nx3.5-2b
// answers as a small chat model, every other side kind is refused naming its route.

import type {FastifyReply, FastifyRequest} from "fastify";
import type {ServerDeps} from "../deps.ts";
import {wrongRoute, type SideRunner} from "../../side-models/side-models.ts";
import {serveDecisionChat} from "./decide/chat-route.ts";
import {serveSmallGeneration} from "./small-generation/route.ts";

export async function serveSideChat(deps: ServerDeps, runner: SideRunner, req: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  switch (runner.kind) {
    case "decider":
      return serveDecisionChat(deps, runner, req, reply);
    case "small-generation":
      return serveSmallGeneration(deps, runner, req, reply);
    default:
      throw wrongRoute(runner);
  }
}

/** The other generation routes serve only the main model: a side model's name there is refused naming its route. */
export function refuseSideModel(deps: ServerDeps, model: unknown): void {
  const runner = deps.side?.find(model);
  if (runner) throw wrongRoute(runner);
}
