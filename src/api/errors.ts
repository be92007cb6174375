/**
 * The one place where failures become HTTP responses in the contract's shape:
 * `{"error": {"code", "message"}}`. User mistakes get a 4xx and a sentence; only bugs get a 500,
 * and those are logged with their stack but answered without it.
 */
import type { FastifyError, FastifyInstance } from 'fastify';
import { BerthError, type ErrorCode } from '../domain/errors.js';

interface AjvError {
  keyword: string;
  instancePath: string;
  params: Record<string, unknown>;
  message?: string;
}

const CODE_BY_STATUS: Record<number, ErrorCode> = {
  400: 'bad_request',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  405: 'method_not_allowed',
  409: 'conflict',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  422: 'unprocessable',
};

const PART: Record<string, string> = {
  body: 'body',
  querystring: 'query',
  params: 'path',
  headers: 'header',
};

/** Turns Ajv's first error into a sentence that names the field. */
export function describeValidationError(context: string, e: AjvError): string {
  const where = PART[context] ?? context;
  const field = e.instancePath.replace(/^\//, '').replace(/\//g, '.');
  const subject = field ? `${where} field "${field}"` : `request ${where}`;
  switch (e.keyword) {
    case 'additionalProperties':
      return `unknown field "${[field, String(e.params.additionalProperty)].filter(Boolean).join('.')}" in request ${where}`;
    case 'required':
      return `request ${where} is missing required field "${[field, String(e.params.missingProperty)].filter(Boolean).join('.')}"`;
    case 'type':
      return `${subject} must be ${String(e.params.type).replace(',', ' or ')}`;
    case 'enum':
      return `${subject} must be one of ${(e.params.allowedValues as unknown[]).join(', ')}`;
    case 'anyOf':
      return `${subject} has the wrong type`;
    default:
      return `${subject} ${e.message ?? 'is invalid'}`;
  }
}

function fastifyMessage(err: FastifyError): string {
  switch (err.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return 'request body is too large';
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return 'unsupported content type: send application/json';
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return 'request body is empty but Content-Type is application/json';
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return `malformed JSON in request body: ${err.message}`;
    default:
      return err instanceof SyntaxError ? `malformed JSON in request body: ${err.message}` : err.message;
  }
}

export function installErrorHandlers(app: FastifyInstance): void {
  app.setErrorHandler((err: FastifyError, request, reply) => {
    if (err instanceof BerthError) {
      return reply.status(err.status).send({ error: { code: err.code, message: err.message } });
    }
    if (err.validation && err.validation.length > 0) {
      const message = describeValidationError(err.validationContext ?? 'body', err.validation[0] as AjvError);
      return reply.status(400).send({ error: { code: 'bad_request', message } });
    }
    const status = err.statusCode ?? 500;
    if (status >= 400 && status < 500) {
      const code = CODE_BY_STATUS[status] ?? 'bad_request';
      return reply.status(status).send({ error: { code, message: fastifyMessage(err) } });
    }
    request.log.error({ err }, 'internal error');
    return reply
      .status(500)
      .send({ error: { code: 'internal', message: 'internal server error (see the server log)' } });
  });
  app.setNotFoundHandler((request, reply) =>
    reply.status(404).send({
      error: { code: 'not_found', message: `no route ${request.method} ${request.url.split('?')[0]}` },
    }),
  );
}
