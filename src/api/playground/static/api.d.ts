// Types of api.js for the unit tests (the browser runs the .js as shipped; this file is not served).

export type Route = "chat" | "responses" | "messages";
export const ROUTES: Record<Route, {label: string; path: string}>;

export interface ToolCall {id: string; name: string; args: string}
export interface Reply {
  text: string;
  reasoning: string;
  tools: Record<number, ToolCall>;
  timings: Record<string, number> | null;
  usage: unknown;
  finish: string | null;
  error: string | null;
  progress: unknown;
}

export interface Settings {
  system?: string; max_tokens?: string; temperature?: string; top_p?: string; top_k?: string; min_p?: string; seed?: string; effort?: string;
}

export function buildRequest(route: Route, history: {role: "user" | "assistant"; content: string; pictures?: string[]}[], s: Settings,
  schema: object | null, tools: object[] | null): Record<string, unknown>;
export function emptyReply(): Reply;
export function applyEvent(route: Route, reply: Reply, ev: {event: string; data: unknown}): void;
export function cacheShare(t: {cache_n: number; prompt_n: number} | null): number;
export function errorMessage(body: unknown, status: number): string;

export const IMAGE_SIZES: string[];
export const EDIT_SIZES: string[];
export interface ImageForm {prompt?: string; size?: string; n?: string; seed?: string}
export function imageRequest(f: ImageForm, model: string, picture: Blob & {name?: string} | null):
  {kind: "generations"; path: string; body: Record<string, unknown>} | {kind: "edits" | "variations"; path: string; body: FormData};
export function imageResult(body: unknown): {urls: string[]; seed: number | null; size: string};
export function pictureInput(attach: (files: File[]) => void): {onPaste(e: ClipboardEvent): void; onDrop(e: DragEvent): void};
