/**
 * Fastify's schema compiler, configured for a strict API: bodies are never coerced (a string
 * where a number belongs is an error) and unknown fields are refused, not silently dropped.
 * Path and query parameters arrive as strings, so they alone are coerced to the schema's type.
 * No value may be infinite or NaN, whatever its schema says (see `nonFinitePath`).
 */
import { Ajv } from 'ajv';
import type { FastifySchemaCompiler } from 'fastify';
import { findPath } from './json-paths.js';

const strictAjv = new Ajv({
  coerceTypes: false,
  removeAdditional: false,
  useDefaults: false,
  allErrors: false,
  strict: false,
});
const coercingAjv = new Ajv({
  coerceTypes: true,
  removeAdditional: false,
  useDefaults: true,
  allErrors: false,
  strict: false,
});

/**
 * The JSON pointer (as Ajv's `instancePath`) of a number in `data` that is not finite, if any.
 * JSON.parse reads a number too large for a double (1e400) as Infinity, and Ajv coerces the query
 * string "Infinity" to it; Ajv's `integer`, `minimum` and unions let both through (its
 * `strictNumbers` does not re-check a coerced value). No field of the API means "infinite", so
 * every validated value is walked once, here, for every route.
 */
export function nonFinitePath(data: unknown): string | undefined {
  return findPath(data, (value) => typeof value === 'number' && !Number.isFinite(value))?.path;
}

export const validatorCompiler: FastifySchemaCompiler<object> = ({ schema, httpPart }) => {
  const validate = (httpPart === 'body' ? strictAjv : coercingAjv).compile(schema);
  const check: ReturnType<FastifySchemaCompiler<object>> = (data: unknown): boolean => {
    const valid = validate(data); // first: it coerces path and query strings in place
    const at = nonFinitePath(data);
    if (at !== undefined) {
      check.errors = [
        {
          keyword: 'finite',
          instancePath: at,
          schemaPath: '',
          params: {},
          message: 'must be a finite number',
        },
      ];
      return false;
    }
    check.errors = validate.errors;
    return valid;
  };
  return check;
};
