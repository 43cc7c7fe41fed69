// The side-model routes. Registered only when SVC_NPU_MODELS names models: without it the server
// behaves as if none of them existed (the paths answer 404 like any unknown route).

import type {FastifyInstance} from "fastify";
import type {ServerDeps} from "../deps.ts";
import type {SideModels} from "../../side-models/side-models.ts";
import {registerEmbeddingsRoute} from "./embeddings/route.ts";
import {registerClassifyRoute} from "./classify/route.ts";
import {registerDecideRoute} from "./decide/route.ts";
import {registerRerankRoute} from "./rerank/route.ts";
import {registerModerationRoute} from "./moderations/route.ts";
import {registerTranscriptionRoute} from "./transcriptions/route.ts";
import {registerImageRoutes} from "./images/route.ts";

export function registerSideRoutes(app: FastifyInstance, deps: ServerDeps, side: SideModels): void {
  registerEmbeddingsRoute(app, deps, side);
  registerClassifyRoute(app, deps, side);
  registerDecideRoute(app, deps, side);
  registerRerankRoute(app, deps, side);
  registerModerationRoute(app, deps, side);
  registerTranscriptionRoute(app, deps, side);
  registerImageRoutes(app, deps, side);
}
