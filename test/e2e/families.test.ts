// One model family of each call syntax shape (json, named, xml, each custom kind, and none) end to end on a scripted
// model; the other families run in the slow tier (test/slow/families.test.ts). The matrix: families-suite.ts.

import {familyMatrix, representative} from "./families-suite.ts";

familyMatrix("one model family of each call shape on a scripted model", representative);
