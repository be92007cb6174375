/**
 * Typed errors. Every failure a user can cause is one of these; the API maps them to an HTTP
 * status and `{"error": {"code", "message"}}` in one place, the CLI to a one-line message and a
 * non-zero exit. Anything else that escapes is a bug and becomes a 500.
 */
export type ErrorCode =
  | 'bad_request'
  | 'unauthorized'
  | 'forbidden'
  | 'not_found'
  | 'method_not_allowed'
  | 'conflict'
  | 'payload_too_large'
  | 'unsupported_media_type'
  | 'unprocessable'
  | 'too_many_requests'
  | 'unavailable'
  | 'internal';

export class BerthError extends Error {
  constructor(
    readonly code: ErrorCode,
    readonly status: number,
    message: string,
  ) {
    super(message);
    this.name = new.target.name;
  }
}

/** The request is malformed: not JSON, wrong types, unknown fields, bad names or quantities. */
export class BadRequestError extends BerthError {
  constructor(message: string) {
    super('bad_request', 400, message);
  }
}

export class UnauthorizedError extends BerthError {
  constructor(message = 'missing or invalid token: pass "Authorization: Bearer TOKEN"') {
    super('unauthorized', 401, message);
  }
}

export class ForbiddenError extends BerthError {
  constructor(message: string) {
    super('forbidden', 403, message);
  }
}

export class NotFoundError extends BerthError {
  constructor(message: string) {
    super('not_found', 404, message);
  }
}

/** The request is valid but clashes with current state: in use, inactive, duplicate. */
export class ConflictError extends BerthError {
  constructor(message: string) {
    super('conflict', 409, message);
  }
}

/** The request is well-formed but can never succeed: unknown target, missing privilege, too big. */
export class UnprocessableError extends BerthError {
  constructor(message: string) {
    super('unprocessable', 422, message);
  }
}

/** A body larger than a limit allows (an artifact over its job's limit); the message names it. */
export class PayloadTooLargeError extends BerthError {
  constructor(message: string) {
    super('payload_too_large', 413, message);
  }
}

/**
 * A limit refuses the request for now: a project's `maxQueued`, or a token's rate limit. Answered
 * with 429 and Retry-After; the message names the limit.
 */
export class TooManyRequestsError extends BerthError {
  constructor(
    message: string,
    readonly retryAfterSeconds: number,
    /**
     * How long the answer is held before it is sent (the rate limit's: until its window ends), so
     * that a client that does not wait cannot turn refusals into load.
     */
    readonly holdMs = 0,
  ) {
    super('too_many_requests', 429, message);
  }
}

/**
 * The server cannot serve this now but will soon: a replica without a leader to hand the request
 * to (during an election). Answered with 503 and Retry-After.
 */
export class UnavailableError extends BerthError {
  constructor(
    message: string,
    readonly retryAfterSeconds = 1,
  ) {
    super('unavailable', 503, message);
  }
}

/** Invalid server configuration; `key` is the dotted path of the offending setting. */
export class ConfigError extends Error {
  constructor(
    readonly key: string,
    readonly detail: string,
    readonly file?: string,
  ) {
    super(`${file ? `${file}: ` : ''}${key ? `${key}: ` : ''}${detail}`);
    this.name = 'ConfigError';
  }
}
