// One generation model as the routes see it. Lives below the API so that side models that generate (small
// generation) can build one without reaching up into the routes.

import type {Engine} from "../engine/engine.ts";
import type {HandleRegistry} from "../sessions/handles.ts";
import type {ChatTemplate} from "../templates/chat-template.ts";
import type {GenerationPipeline} from "./generate.ts";

export interface ModelIdentity {
  id: string;
  path: string;
  sha256: string | null;
  source: string;
}

/**
 * One generation model as the routes see it: what serves it (engine and pipeline over its template) and what
 * replies name. The main model's handle is built by load-models.ts from the real engine; tests build handles
 * over an engine double; small generation has one of its own.
 */
export interface ModelHandle {
  identity: ModelIdentity;
  engine: Engine;
  pipeline: GenerationPipeline;
  template: ChatTemplate | null;
  /** Named sessions on this model (SVC_FORK=1); null when off. */
  sessions: HandleRegistry | null;
  /** Finishes what replies already sent still owe (seals, keeps), then frees the model. */
  close(): Promise<void>;
}

