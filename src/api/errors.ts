/**
 * The one place where failures become HTTP responses in the contract's shape:
 * `{"error": {"code", "message"}}`. User mistakes get a 4xx and a sentence; only bugs get a 500,
 * and those are logged with their stack but answered without it.
 */
import type { FastifyError, FastifyInstance, FastifyRequest } from 'fastify';
import { BerthError, TooManyRequestsError, UnavailableError, type ErrorCode } from '../domain/errors.js';
import { NO_CONTROL_CHARACTER, NO_CONTROL_CHARACTER_HELP } from '../domain/names.js';
import { isStoreUnavailable } from '../service/unavailable.js';
import { discardUnreadBody } from './unread-body.js';

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
  429: 'too_many_requests',
};

const PART: Record<string, string> = {
  body: 'body',
  querystring: 'query',
  params: 'path',
  headers: 'header',
};

/** What a pattern of the API's schemas asks, said in words rather than as the pattern. */
const PATTERN_HELP: Record<string, string> = { [NO_CONTROL_CHARACTER]: NO_CONTROL_CHARACTER_HELP };

/**
 * The error worth reporting. For a union (a quantity is a string or a number) Ajv lists each
 * branch's failure before the `anyOf`: a branch that failed on something other than its type is
 * the one the caller meant ("must be >= 0"); if every branch failed on type, all types are named.
 */
export function pickValidationError(errors: AjvError[]): AjvError | undefined {
  const union = errors.find((e) => e.keyword === 'anyOf');
  if (!union) return errors[0];
  const branches = errors.filter((e) => e !== union && e.instancePath === union.instancePath);
  const specific = branches.find((e) => e.keyword !== 'type');
  if (specific) return specific;
  const types = [...new Set(branches.map((e) => String(e.params.type)))];
  return types.length > 0 ? { ...union, keyword: 'type', params: { type: types.join(',') } } : union;
}

/** Turns an Ajv error into a sentence that names the field. */
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
      return `${subject} must be ${String(e.params.type).split(',').join(' or ')}`;
    case 'enum':
      return `${subject} must be one of ${(e.params.allowedValues as unknown[]).join(', ')}`;
    case 'anyOf':
      return `${subject} has the wrong type`;
    case 'pattern':
      return `${subject} ${PATTERN_HELP[String(e.params.pattern)] ?? e.message ?? 'is invalid'}`;
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

/** The media type of a Content-Type header, lowercased, without parameters. */
const mediaType = (header: string | undefined) => header?.split(';')[0]?.trim().toLowerCase() || undefined;

/**
 * A body whose type is wrong because it never was JSON: Fastify reads text/plain as a string, and
 * a request without a body leaves it undefined. Either deserves a plainer answer than
 * "request body must be object".
 */
function bodyNotJson(
  request: FastifyRequest,
): { status: number; code: ErrorCode; message: string } | undefined {
  const type = mediaType(request.headers['content-type']);
  if (type && type !== 'application/json') {
    return {
      status: 415,
      code: 'unsupported_media_type',
      message: `unsupported content type "${type}": send application/json`,
    };
  }
  if (request.body === undefined) {
    return {
      status: 400,
      code: 'bad_request',
      message: 'request body is missing: send a JSON object with Content-Type: application/json',
    };
  }
  return undefined;
}

export function installErrorHandlers(app: FastifyInstance): void {
  app.setErrorHandler((err: FastifyError, request, reply) => {
    // A request refused before its body was read to the end: the rest is read and discarded, so
    // that the client gets this answer and no socket is left paused (unread-body.ts).
    discardUnreadBody(request.raw);
    if (err instanceof BerthError) {
      // RFC 7235: a 401 names the scheme that would work.
      if (err.status === 401) void reply.header('www-authenticate', 'Bearer realm="berth"');
      if (err instanceof UnavailableError || err instanceof TooManyRequestsError)
        void reply.header('retry-after', String(err.retryAfterSeconds));
      const body = { error: { code: err.code, message: err.message } };
      if (err instanceof TooManyRequestsError && err.holdMs > 0) {
        setTimeout(() => void reply.status(err.status).send(body), err.holdMs);
        return reply;
      }
      return reply.status(err.status).send(body);
    }
    if (err.validation && err.validation.length > 0) {
      const context = err.validationContext ?? 'body';
      const first = pickValidationError(err.validation);
      const wholeBody = context === 'body' && first?.instancePath === '' && first.keyword === 'type';
      const notJson = wholeBody ? bodyNotJson(request) : undefined;
      if (notJson) {
        return reply.status(notJson.status).send({ error: { code: notJson.code, message: notJson.message } });
      }
      const message = first ? describeValidationError(context, first) : 'the request is invalid';
      return reply.status(400).send({ error: { code: 'bad_request', message } });
    }
    // The client went away mid-body (Node's "aborted", code ECONNRESET): nobody reads the answer,
    // and it is not the store's ECONNRESET.
    if (request.raw.errored !== null && !request.raw.complete) {
      request.log.info('the client went away before the request was sent whole');
      return reply.status(400).send({ error: { code: 'bad_request', message: 'the request was cut short' } });
    }
    if (isStoreUnavailable(err)) {
      request.log.warn({ err }, 'the store is unavailable');
      return reply
        .status(503)
        .header('retry-after', '1')
        .send({
          error: { code: 'unavailable', message: 'the database is unavailable at the moment; try again' },
        });
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
