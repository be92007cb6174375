/**
 * A place in a job's artifact list (`GET /jobs/{id}/artifacts`), which is read by attempt, then
 * name: the opaque cursor a page ends with and the next page starts after.
 */
import { BadRequestError } from './errors.js';

/** Where a page of a job's artifacts ends: the last one's attempt and name (they are listed in that order). */
export interface ArtifactKey {
  attempt: number;
  name: string;
}

/** Opaque to clients: base64url of the last artifact's key. */
export function encodeArtifactCursor(k: ArtifactKey): string {
  return Buffer.from(JSON.stringify(['artifact', k.attempt, k.name])).toString('base64url');
}

export function decodeArtifactCursor(cursor: string): ArtifactKey {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    parsed = undefined;
  }
  if (
    !Array.isArray(parsed) ||
    parsed[0] !== 'artifact' ||
    !Number.isSafeInteger(parsed[1]) ||
    typeof parsed[2] !== 'string'
  )
    throw new BadRequestError(
      "cursor: not a cursor of a job's artifacts; use the X-Next-Cursor of the previous page",
    );
  return { attempt: parsed[1] as number, name: parsed[2] };
}
