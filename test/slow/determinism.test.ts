// The full determinism matrix (see test/e2e/determinism-suite.ts): 20 topics, flash attention on and off,
// and prompt-lookup speculation forced on against a reference without it.

import {exactGreedy} from "../e2e/determinism-suite.ts";

exactGreedy("flash attention on (default)", {}, false);
// Without flash attention the probe at start finds rows computed in groups, so reuse is matched by pieces there.
exactGreedy("flash attention off", {SVC_FLASH_ATTENTION: "0"}, false, undefined, "pieces");
exactGreedy("prompt-lookup speculation on", {}, true);
