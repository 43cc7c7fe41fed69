// The languages Whisper was trained on (openai/whisper tokenizer.py, the 99 of the multilingual models
// before large-v3), with the aliases that file accepts. `language` may be a code or a name, any case.

const LANGUAGES: Readonly<Record<string, string>> = {
  en: "english", zh: "chinese", de: "german", es: "spanish", ru: "russian", ko: "korean", fr: "french", ja: "japanese",
  pt: "portuguese", tr: "turkish", pl: "polish", ca: "catalan", nl: "dutch", ar: "arabic", sv: "swedish", it: "italian",
  id: "indonesian", hi: "hindi", fi: "finnish", vi: "vietnamese", he: "hebrew", uk: "ukrainian", el: "greek", ms: "malay",
  cs: "czech", ro: "romanian", da: "danish", hu: "hungarian", ta: "tamil", no: "norwegian", th: "thai", ur: "urdu",
  hr: "croatian", bg: "bulgarian", lt: "lithuanian", la: "latin", mi: "maori", ml: "malayalam", cy: "welsh", sk: "slovak",
  te: "telugu", fa: "persian", lv: "latvian", bn: "bengali", sr: "serbian", az: "azerbaijani", sl: "slovenian", kn: "kannada",
  et: "estonian", mk: "macedonian", br: "breton", eu: "basque", is: "icelandic", hy: "armenian", ne: "nepali", mn: "mongolian",
  bs: "bosnian", kk: "kazakh", sq: "albanian", sw: "swahili", gl: "galician", mr: "marathi", pa: "punjabi", si: "sinhala",
  km: "khmer", sn: "shona", yo: "yoruba", so: "somali", af: "afrikaans", oc: "occitan", ka: "georgian", be: "belarusian",
  tg: "tajik", sd: "sindhi", gu: "gujarati", am: "amharic", yi: "yiddish", lo: "lao", uz: "uzbek", fo: "faroese",
  ht: "haitian creole", ps: "pashto", tk: "turkmen", nn: "nynorsk", mt: "maltese", sa: "sanskrit", lb: "luxembourgish",
  my: "myanmar", bo: "tibetan", tl: "tagalog", mg: "malagasy", as: "assamese", tt: "tatar", haw: "hawaiian", ln: "lingala",
  ha: "hausa", ba: "bashkir", jw: "javanese", su: "sundanese",
};

const ALIASES: Readonly<Record<string, string>> = {
  burmese: "my", valencian: "ca", flemish: "nl", haitian: "ht", letzeburgesch: "lb", pushto: "ps", panjabi: "pa",
  moldavian: "ro", moldovan: "ro", sinhalese: "si", castilian: "es", mandarin: "zh",
};

const BY_NAME: Readonly<Record<string, string>> = Object.fromEntries([
  ...Object.entries(LANGUAGES).map(([code, name]) => [name, code]),
  ...Object.entries(ALIASES),
]);

export const LANGUAGE_COUNT = Object.keys(LANGUAGES).length;

/** The Whisper code for a code or a name (any case), or null when it names no language Whisper knows. */
export function whisperLanguage(value: string): string | null {
  const v = value.trim().toLowerCase();
  if (Object.hasOwn(LANGUAGES, v)) return v;
  return Object.hasOwn(BY_NAME, v) ? BY_NAME[v]! : null;
}

/** OpenAI's verbose_json names the language in full ("english"). */
export function languageName(code: string): string {
  return Object.hasOwn(LANGUAGES, code) ? LANGUAGES[code]! : code;
}
