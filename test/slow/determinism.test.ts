// The full determinism matrix (see test/e2e/determinism-suite.ts): 20 topics, flash attention on and off on the
// test model, and prompt-lookup speculation forced on against a reference without it on the default model, SmolLM2.

import {trainedModel} from "../../support/server.ts";
import {exactGreedy} from "../e2e/determinism-suite.ts";

exactGreedy("flash attention on (default)", {}, false);
// Without flash attention the default model's probe at start finds rows computed in groups, so reuse is matched by
// pieces there. The test model's two layers never carry those last bits into the KV, so its probe says rows
// (integration/exactness-probe.test.ts checks SmolLM2's verdict); the setting makes it match as SmolLM2 does.
exactGreedy("flash attention off", {SVC_FLASH_ATTENTION: "0", SVC_EXACT_REUSE: "pieces"}, false, undefined, "pieces");
// Trained model: drafts are accepted only where a reply copies its prompt, which the test model's never do (0 of 23).
exactGreedy("prompt-lookup speculation on (SmolLM2)", trainedModel(), true);
