/** The error mapping in src/api/errors.ts, on a bare Fastify instance: validation messages. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import Fastify from 'fastify';
import { describeValidationError, installErrorHandlers, pickValidationError } from '../../src/api/errors.js';
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
