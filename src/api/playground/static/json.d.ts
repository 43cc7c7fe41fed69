// Types of json.js for the unit tests (the browser runs the .js as shipped; this file is not served).

export function highlight(text: string): {cls: string; text: string}[];
export function validate(schema: unknown, value: unknown): string[];
export function checkReply(schema: unknown, text: string): {ok: boolean; errors: string[]; pretty: string};
