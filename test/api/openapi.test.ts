/**
 * The served OpenAPI document is valid for the version it declares, by a strict validator
 * (swagger-parser: the official OpenAPI 3.0 schema, then its own semantic checks).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import SwaggerParser from '@apidevtools/swagger-parser';
import type { OpenAPI } from 'openapi-types';
import { assertError, assertStatus, createQueue, useServer } from './fixtures.js';

const ctx = useServer();
const { api } = ctx;

interface Schema {
  minimum?: number;
  exclusiveMinimum?: boolean | number;
}
interface Doc {
  openapi: string;
  paths: Record<string, Record<string, { requestBody?: { content: Record<string, { schema: unknown }> } }>>;
}

/** The schema of a body field of an operation in the document. */
function bodyField(doc: Doc, path: string, method: string, field: string): Schema | undefined {
  const schema = doc.paths[path]?.[method]?.requestBody?.content['application/json']?.schema as
    { properties?: Record<string, Schema> } | undefined;
  return schema?.properties?.[field];
}

void test('the served OpenAPI document is valid OpenAPI of the version it declares', async () => {
  const res = await api<Doc>(undefined, 'GET', '/openapi.json');
  assertStatus(res, 200);
  assert.match(res.body.openapi, /^3\.0\.\d+$/);
  // The validator dereferences in place: give it a copy of its own.
  await SwaggerParser.validate(structuredClone(res.body) as unknown as OpenAPI.Document);

  // 3.0 spells "greater than 0" as a minimum that is exclusive (3.1 as exclusiveMinimum: 0).
  for (const [path, method] of [
    ['/api/v1/projects', 'post'],
    ['/api/v1/projects/{name}', 'patch'],
  ] as const) {
    const weight = bodyField(res.body, path, method, 'weight');
    assert.equal(weight?.minimum, 0, `${method} ${path}: weight`);
    assert.equal(weight.exclusiveMinimum, true, `${method} ${path}: weight`);
  }
});

void test('weight must still be greater than 0', async () => {
  await createQueue(api, ctx.admin, 'q-openapi');
  const project = { name: 'p-openapi', clusterQueue: 'q-openapi' };
  assertError(
    await api(ctx.admin, 'POST', '/projects', { ...project, weight: 0 }),
    400,
    'bad_request',
    /"weight" must be > 0/,
  );
  assertStatus(await api(ctx.admin, 'POST', '/projects', { ...project, weight: 0.5 }), 201);
  assertError(
    await api(ctx.admin, 'PATCH', '/projects/p-openapi', { weight: 0 }),
    400,
    'bad_request',
    /"weight" must be > 0/,
  );
});
