// Exactness on every `npm test`, on the test model: the default setup (flash attention on, auto speculation) on
// the first 6 of the 20 topics, batched (four, then two at a time), warm and as follow-ups; and reuse matched by pieces on 5. The full matrix is test/slow/determinism.test.ts.

import {exactGreedy} from "./determinism-suite.ts";

exactGreedy("flash attention on (default), 6 topics", {}, false, 6);
// The rule other quantisations fall back to (the probe at start decides): matching piece cuts, replies sealed.
exactGreedy("reuse matched by pieces (SVC_EXACT_REUSE=pieces), 5 topics", {SVC_EXACT_REUSE: "pieces"}, false, 5, "pieces");
