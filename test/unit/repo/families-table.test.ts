// The model-family table in docs/families.md is generated from the family files (src/templates/families/table.ts).
import assert from "node:assert/strict";
import {readFileSync} from "node:fs";
import {test} from "node:test";
import {familiesTableMarkdown} from "../../../src/templates/families/table.ts";

test("docs/families.md contains the generated model-family table verbatim", () => {
  const page = readFileSync(new URL("../../../docs/families.md", import.meta.url), "utf8");
  assert.ok(page.includes(familiesTableMarkdown()), "regenerate the table in docs/families.md from familiesTableMarkdown()");
});
