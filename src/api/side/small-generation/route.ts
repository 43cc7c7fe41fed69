// Small generation (model nx3.5-2b) on the chat route. Built by the small-generation work.

import type {FastifyReply, FastifyRequest} from "fastify";
import type {ServerDeps} from "../../deps.ts";
import type {SideRunner} from "../../../side-models/side-models.ts";
import {invalidField} from "../../../core/errors.ts";

export async function serveSmallGeneration(_deps: ServerDeps, runner: SideRunner, _req: FastifyRequest, _reply: FastifyReply): Promise<unknown> {
  throw invalidField("model", `${runner.id}: small generation is not served by this build yet`);
}
