// Which runner serves each kind of side model. One line per kind; the runners live beside this file.

import type {SideKind} from "./registry.ts";
import type {RunnerFactory} from "./side-models.ts";
import {createStreamGuardRunner} from "./guard/runner.ts";
import {createSmallGenerationRunner} from "./small-generation/runner.ts";
import {createEmbeddingRunner} from "./embedding/runner.ts";
import {createClassifierRunner} from "./classifier/runner.ts";
import {createDeciderRunner} from "./decider/runner.ts";
import {createRerankerRunner} from "./reranker/runner.ts";
import {createModerationRunner} from "./moderation/runner.ts";
import {createSpeechRunner} from "./speech/runner.ts";
import {createImageRunner} from "./images/runner.ts";

export const RUNNER_FACTORIES: Partial<Record<SideKind, RunnerFactory>> = {
  "small-generation": createSmallGenerationRunner,
  embedding: createEmbeddingRunner,
  classifier: createClassifierRunner,
  "stream-guard": createStreamGuardRunner,
  decider: createDeciderRunner,
  reranker: createRerankerRunner,
  moderation: createModerationRunner,
  speech: createSpeechRunner,
  image: createImageRunner,
};
