/**
 * Fastify's schema compiler, configured for a strict API: bodies are never coerced (a string
 * where a number belongs is an error) and unknown fields are refused, not silently dropped.
 * Path and query parameters arrive as strings, so they alone are coerced to the schema's type.
 */
import { Ajv } from 'ajv';
import type { FastifySchemaCompiler } from 'fastify';

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

export const validatorCompiler: FastifySchemaCompiler<object> = ({ schema, httpPart }) => {
  const ajv = httpPart === 'body' ? strictAjv : coercingAjv;
  return ajv.compile(schema);
};
