// Every model family that test/e2e/families.test.ts does not run (it runs one of each call syntax shape), end to end
// on a scripted model. The matrix: test/e2e/families-suite.ts.

import {familyMatrix, representative} from "../e2e/families-suite.ts";

familyMatrix("every other model family on a scripted model", (family) => !representative(family));
