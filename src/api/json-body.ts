/**
 * The API's JSON bodies: parsed by secure-json-parse (Fastify's own parser, called here so that
 * its refusal can say why — Fastify's default says "not valid JSON" for every failure). A key
 * `__proto__`, or `constructor` holding `prototype`, is refused in any object of any body: code
 * that copies a body's object into another, or looks a user's key up in one, could otherwise reach
 * what every object inherits (issue #40). Other failures quote JSON.parse.
 */
import type { FastifyInstance } from 'fastify';
import sjson from 'secure-json-parse';
import { BerthError } from '../domain/errors.js';

/** What secure-json-parse's refusals say (its messages, not JSON.parse's). */
const POISONED = /forbidden (prototype|constructor) property/;

export function parseJsonBody(text: string): unknown {
  if (text.length === 0)
    throw new BerthError('bad_request', 400, 'request body is empty but Content-Type is application/json');
  try {
    return sjson.parse(text, undefined, { protoAction: 'error', constructorAction: 'error' });
  } catch (e) {
    const message = e instanceof Error ? e.message : String(e);
    if (POISONED.test(message))
      throw new BerthError(
        'bad_request',
        400,
        'request body: a key "__proto__", or "constructor" with "prototype" in it, is refused in any object',
      );
    throw new BerthError('bad_request', 400, `malformed JSON in request body: ${message}`);
  }
}

/** Replaces Fastify's JSON parser with parseJsonBody (the same body limit applies). */
export function installJsonBody(app: FastifyInstance): void {
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
    try {
      done(null, parseJsonBody(body as string));
    } catch (e) {
      done(e as Error, undefined);
    }
  });
}
