/**
 * No request may carry a NUL character (U+0000) into the server, on any route: PostgreSQL's text
 * cannot hold one (it refuses the row with SQLSTATE 22021, and one written into a statement of the
 * simple protocol cuts the message short, 08P01), and a C string stops at it. Job code holds a
 * token and calls the API itself, so this is checked once for every route, before its schema:
 * path parameters, the query string and a JSON body, every value and key however deeply nested.
 * A text body (a job's output, POST /job/self/logs) is not checked: output is kept byte for byte.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { BadRequestError } from '../domain/errors.js';
import { describeValidationError } from './errors.js';
import { findPath } from './json-paths.js';

const hasNul = (s: string): boolean => s.includes('\u0000');

/** The parts of a request that are checked, by the name validation errors give them. */
function parts(request: FastifyRequest): [string, unknown][] {
  const out: [string, unknown][] = [
    ['params', request.params],
    ['querystring', request.query],
  ];
  if (isParsedJson(request.body)) out.push(['body', request.body]);
  return out;
}

/**
 * Whether a body is what the JSON parser made: an array or a plain object. Not a string (a text
 * body, or JSON's own string, which no route takes as a whole body), and not a stream (an
 * artifact's upload, `application/octet-stream`), whose object graph is no data to walk.
 */
function isParsedJson(body: unknown): body is object {
  if (Array.isArray(body)) return true;
  if (typeof body !== 'object' || body === null) return false;
  const proto: unknown = Object.getPrototypeOf(body);
  return proto === Object.prototype || proto === null;
}

/** The sentence that refuses `data` of `part`, naming the field; undefined when it has no NUL. */
export function nulRefusal(part: string, data: unknown): string | undefined {
  const found = findPath(data, (v) => typeof v === 'string' && hasNul(v), hasNul);
  if (!found) return undefined;
  const what = found.inKey ? 'have a key with' : 'contain';
  return describeValidationError(part, {
    keyword: 'nul',
    instancePath: found.path,
    params: {},
    message: `must not ${what} a NUL character (U+0000)`,
  });
}

export function installNulGuard(app: FastifyInstance): void {
  app.addHook('preValidation', async (request) => {
    for (const [part, data] of parts(request)) {
      const refusal = nulRefusal(part, data);
      if (refusal !== undefined) throw new BadRequestError(refusal);
    }
  });
}
