/**
 * The error mapping in src/api/errors.ts, on a bare Fastify instance: validation messages for
 * unions, and router failures in the contract's shape once `frameworkErrors` is wired in.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import Fastify from 'fastify';
import {
  describeValidationError,
  frameworkErrorHandler,
  installErrorHandlers,
  pickValidationError,
} from '../../src/api/errors.js';
import { validatorCompiler } from '../../src/api/validation.js';
import { Quantity } from '../../src/api/schemas.js';

interface ErrorBody {
  error: { code: string; message: string };
}

void describe('validation messages', () => {
  void test('a union whose every branch failed on type names all the types', () => {
    const e = pickValidationError([
      { keyword: 'type', instancePath: '/quota/cpu', params: { type: 'string' } },
      { keyword: 'type', instancePath: '/quota/cpu', params: { type: 'number' } },
      { keyword: 'anyOf', instancePath: '/quota/cpu', params: {} },
    ]);
    assert.ok(e);
    assert.equal(describeValidationError('body', e), 'body field "quota.cpu" must be string or number');
  });

  void test('a union branch that failed on a constraint is the one reported', () => {
    const e = pickValidationError([
      { keyword: 'type', instancePath: '/quota/cpu', params: { type: 'string' } },
      { keyword: 'minimum', instancePath: '/quota/cpu', params: {}, message: 'must be >= 0' },
      { keyword: 'anyOf', instancePath: '/quota/cpu', params: {} },
    ]);
    assert.ok(e);
    assert.equal(describeValidationError('body', e), 'body field "quota.cpu" must be >= 0');
  });

  void test('without a union the first error is reported', () => {
    const e = pickValidationError([
      { keyword: 'required', instancePath: '', params: { missingProperty: 'name' } },
      { keyword: 'type', instancePath: '/x', params: { type: 'string' } },
    ]);
    assert.ok(e);
    assert.equal(describeValidationError('body', e), 'request body is missing required field "name"');
  });

  void test('each kind of error names the part and the field', () => {
    const cases: [string, Parameters<typeof describeValidationError>[1], string][] = [
      [
        'params',
        { keyword: 'maxLength', instancePath: '/name', params: {}, message: 'is too long' },
        'path field "name" is too long',
      ],
      [
        'querystring',
        { keyword: 'type', instancePath: '/state', params: { type: 'string,null' } },
        'query field "state" must be string or null',
      ],
      [
        'body',
        {
          keyword: 'additionalProperties',
          instancePath: '/preemption',
          params: { additionalProperty: 'foo' },
        },
        'unknown field "preemption.foo" in request body',
      ],
      [
        'body',
        { keyword: 'enum', instancePath: '/role', params: { allowedValues: ['a', 'b'] } },
        'body field "role" must be one of a, b',
      ],
      [
        'body',
        { keyword: 'type', instancePath: '', params: { type: 'object' } },
        'request body must be object',
      ],
    ];
    for (const [context, e, expected] of cases) assert.equal(describeValidationError(context, e), expected);
  });

  void test('the Quantity schema, compiled as the API compiles it, reports both types', async () => {
    const app = Fastify();
    app.setValidatorCompiler(validatorCompiler);
    installErrorHandlers(app);
    app.post('/q', { schema: { body: Quantity } }, async () => ({ ok: true }));
    for (const [body, message] of [
      ['true', 'request body must be string or number'],
      ['-1', 'request body must be >= 0'],
      ['{}', 'request body must be string or number'],
    ] as const) {
      const res = await app.inject({
        method: 'POST',
        url: '/q',
        payload: body,
        headers: { 'content-type': 'application/json' },
      });
      assert.equal(res.statusCode, 400, res.body);
      assert.equal(res.json<ErrorBody>().error.message, message);
    }
    assert.equal(
      (
        await app.inject({
          method: 'POST',
          url: '/q',
          payload: '"2Gi"',
          headers: { 'content-type': 'application/json' },
        })
      ).statusCode,
      200,
    );
    await app.close();
  });
});

void describe('router failures with frameworkErrors', () => {
  async function app() {
    const a = Fastify({ frameworkErrors: frameworkErrorHandler, routerOptions: { maxParamLength: 256 } });
    installErrorHandlers(a);
    a.get('/things/:name', async (req) => ({ name: (req.params as { name: string }).name }));
    await a.ready();
    return a;
  }

  void test('bad percent-encoding is a 400 in the contract shape', async () => {
    const a = await app();
    const res = await a.inject({ method: 'GET', url: '/things/%zz' });
    assert.equal(res.statusCode, 400);
    assert.deepEqual(res.json(), {
      error: { code: 'bad_request', message: 'the request path is not valid percent-encoded UTF-8' },
    });
    await a.close();
  });

  void test('an over-long path segment is a 414 in the contract shape; 253 characters pass', async () => {
    const a = await app();
    const res = await a.inject({ method: 'GET', url: `/things/${'a'.repeat(300)}` });
    assert.equal(res.statusCode, 414);
    assert.deepEqual(res.json(), {
      error: { code: 'uri_too_long', message: 'a name in the request path is too long' },
    });
    const ok = await a.inject({ method: 'GET', url: `/things/${'a'.repeat(253)}` });
    assert.equal(ok.statusCode, 200);
    await a.close();
  });
});
