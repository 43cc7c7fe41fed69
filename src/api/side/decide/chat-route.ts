// Decisions on the chat route (a decider id with a response_format of options). Built by the decisions work.

import type {FastifyReply, FastifyRequest} from "fastify";
import type {ServerDeps} from "../../deps.ts";
import type {SideRunner} from "../../../side-models/side-models.ts";
import {invalidField} from "../../../core/errors.ts";

export async function serveDecisionChat(_deps: ServerDeps, runner: SideRunner, _req: FastifyRequest, _reply: FastifyReply): Promise<unknown> {
  throw invalidField("model", `${runner.id}: decisions are not served by this build yet`);
}
