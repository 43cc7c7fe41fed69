// Pictures in a request body, as every dialect reads them: a base64 data URL or bare base64 (no URL is ever
// fetched), decoded here and placed in the message text as a marker (core/media.ts); the pipeline checks the
// picture itself (media/picture.ts). Without a vision tower the dialect refuses the part by its position instead.

import {mediaMarker, type MediaInput} from "../../core/media.ts";
import {pictureBytes} from "../../media/picture.ts";

/** Base64 text of one picture, at most (the spec's bound for pictures in embeddings; one for every route). */
export const PICTURE_BASE64_LIMIT = 32 * 1024 * 1024;

export class PictureCollector {
  readonly media: MediaInput[] = [];

  /** The marker that stands for the picture in the message text; `field` names the source string in refusals. */
  add(source: string, field: string): string {
    this.media.push({bytes: pictureBytes(source, field, PICTURE_BASE64_LIMIT), field});
    return mediaMarker(this.media.length - 1);
  }
}
