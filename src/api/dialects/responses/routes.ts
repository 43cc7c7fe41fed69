// POST /v1/responses (also without the /v1 prefix), the Responses-style route; its input-token count;
// and the stored-response routes, which answer 404 because there is no response store.

import type {FastifyInstance, FastifyReply, FastifyRequest} from "fastify";
import {ApiError} from "../../../core/errors.ts";
import {decodeContext} from "../../decode-context.ts";
import type {ServerDeps} from "../../deps.ts";
import {hangUpSignal, serveGeneration} from "../../serve-generation.ts";
import {codexThread} from "./agent-thread.ts";
import {decodeResponses} from "./decode.ts";
import {responsesBody, responsesStreamEncoder} from "./encode.ts";
import {newId, responseShell} from "./response-object.ts";

export function registerResponsesRoutes(app: FastifyInstance, deps: ServerDeps): void {
  const create = async (req: FastifyRequest, reply: FastifyReply) => {
    const id = newId("resp");
    const model = deps.models.mainOnly(req.body);
    const abort = hangUpSignal(req, reply);
    const decoded = decodeResponses(req.body, decodeContext(deps, id, model.handle));
    const shell = responseShell({id, createdAt: Math.floor(Date.now() / 1000), model: model.id}, decoded);
    const opts = {summary: decoded.summary, namespaces: decoded.namespaces};
    await serveGeneration(deps, model.handle, req, reply, {
      route: "responses",
      transport: {requestId: id, signal: abort.signal},
      stream: decoded.stream,
      sessions: true,
      agentThread: () => codexThread(req.headers, req.body),
      genRequest: decoded.request,
      collect: (events) => responsesBody(shell, events, opts),
      encoder: () => responsesStreamEncoder(shell, opts),
    });
  };

  // The SDK's client.responses.inputTokens.count: the prompt this body would make, counted, not run.
  const countInputTokens = async (req: FastifyRequest) => {
    const decoded = decodeResponses(req.body, decodeContext(deps, newId("count"), deps.main));
    return {object: "response.input_tokens", input_tokens: await deps.main.pipeline.countPromptTokens(decoded.request)};
  };

  const noStore = (what: string) => async (req: FastifyRequest) => {
    const {id} = req.params as {id: string};
    throw new ApiError("not_found",
      `response ${id} cannot be ${what}: there is no response store on this server, responses are not kept after they are sent; ` +
        "send the whole conversation in input on every request",
      {param: "response_id"});
  };

  for (const prefix of ["/v1", ""]) {
    app.post(`${prefix}/responses`, create);
    app.post(`${prefix}/responses/input_tokens`, countInputTokens);
    app.get(`${prefix}/responses/:id`, noStore("retrieved"));
    app.delete(`${prefix}/responses/:id`, noStore("deleted"));
    app.post(`${prefix}/responses/:id/cancel`, noStore("cancelled"));
    app.get(`${prefix}/responses/:id/input_items`, noStore("listed (its input items)"));
  }
}
