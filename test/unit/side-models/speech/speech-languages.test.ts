// The transcription route's `language` field: codes and names (Whisper's 99 languages and the aliases
// openai/whisper's tokenizer accepts). The speech ids of SVC_NPU_MODELS are tested in side-registry.test.ts.

import assert from "node:assert/strict";
import {describe, test} from "node:test";
import {LANGUAGE_COUNT, languageName, whisperLanguage} from "../../../../src/side-models/speech/languages.ts";

// Reference: LANGUAGES and TO_LANGUAGE_CODE of whisper/tokenizer.py in the openai-whisper 20250625 sdist, without
// "yue" (cantonese, added for large-v3; the 99 before it). "_" stands for a space in a name.
const OPENAI_LANGUAGES: [string, string][] = (
  "en:english zh:chinese de:german es:spanish ru:russian ko:korean fr:french ja:japanese pt:portuguese tr:turkish pl:polish " +
  "ca:catalan nl:dutch ar:arabic sv:swedish it:italian id:indonesian hi:hindi fi:finnish vi:vietnamese he:hebrew uk:ukrainian " +
  "el:greek ms:malay cs:czech ro:romanian da:danish hu:hungarian ta:tamil no:norwegian th:thai ur:urdu hr:croatian bg:bulgarian " +
  "lt:lithuanian la:latin mi:maori ml:malayalam cy:welsh sk:slovak te:telugu fa:persian lv:latvian bn:bengali sr:serbian " +
  "az:azerbaijani sl:slovenian kn:kannada et:estonian mk:macedonian br:breton eu:basque is:icelandic hy:armenian ne:nepali " +
  "mn:mongolian bs:bosnian kk:kazakh sq:albanian sw:swahili gl:galician mr:marathi pa:punjabi si:sinhala km:khmer sn:shona " +
  "yo:yoruba so:somali af:afrikaans oc:occitan ka:georgian be:belarusian tg:tajik sd:sindhi gu:gujarati am:amharic yi:yiddish " +
  "lo:lao uz:uzbek fo:faroese ht:haitian_creole ps:pashto tk:turkmen nn:nynorsk mt:maltese sa:sanskrit lb:luxembourgish " +
  "my:myanmar bo:tibetan tl:tagalog mg:malagasy as:assamese tt:tatar haw:hawaiian ln:lingala ha:hausa ba:bashkir jw:javanese " +
  "su:sundanese"
).split(" ").map((pair) => {
  const [code, name] = pair.split(":");
  return [code!, name!.replace(/_/g, " ")];
});

const OPENAI_ALIASES: Record<string, string> = {burmese: "my", valencian: "ca", flemish: "nl", haitian: "ht", letzeburgesch: "lb",
  pushto: "ps", panjabi: "pa", moldavian: "ro", moldovan: "ro", sinhalese: "si", castilian: "es", mandarin: "zh"};

describe("whisperLanguage", () => {
  test("a code or a name, any case, surrounding space trimmed", () => {
    assert.equal(whisperLanguage("en"), "en");
    assert.equal(whisperLanguage("EN"), "en");
    assert.equal(whisperLanguage("English"), "en");
    assert.equal(whisperLanguage("english"), "en");
    assert.equal(whisperLanguage(" de "), "de");
    assert.equal(whisperLanguage("haw"), "haw");
    assert.equal(whisperLanguage("Haitian Creole"), "ht");
  });

  test("the tokenizer's aliases", () => {
    assert.equal(whisperLanguage("castilian"), "es");
    assert.equal(whisperLanguage("Mandarin"), "zh");
    assert.equal(whisperLanguage("valencian"), "ca");
    assert.equal(whisperLanguage("burmese"), "my");
  });

  test("anything else is null", () => {
    for (const v of ["xx", "klingon", "", "   ", "e", "eng", "en-US", "zz"]) assert.equal(whisperLanguage(v), null, JSON.stringify(v));
  });

  test("names of Object.prototype's members are not languages", () => {
    for (const v of ["constructor", "__proto__", "toString", "hasOwnProperty", "valueOf", "isPrototypeOf"]) {
      assert.equal(whisperLanguage(v), null, v);
    }
  });

  test("99 languages, each code and name as openai/whisper's tokenizer.py has them", () => {
    assert.equal(LANGUAGE_COUNT, 99);
    assert.equal(OPENAI_LANGUAGES.length, 99);
    for (const [code, name] of OPENAI_LANGUAGES) {
      assert.equal(whisperLanguage(code), code, code);
      assert.equal(whisperLanguage(name), code, name);
      assert.equal(whisperLanguage(name.toUpperCase()), code, name);
      assert.equal(languageName(code), name, code);
    }
    for (const [alias, code] of Object.entries(OPENAI_ALIASES)) assert.equal(whisperLanguage(alias), code, alias);
    assert.equal(languageName("en"), "english");
    assert.equal(languageName("es"), "spanish");
    assert.equal(languageName("haw"), "hawaiian");
  });

  test("languageName of an unknown code gives the code back", () => {
    assert.equal(languageName("xx"), "xx");
    assert.equal(languageName("constructor"), "constructor");
  });
});
