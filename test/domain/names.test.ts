/** Name rules: DNS labels, resource names, user names, privileges. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { BadRequestError } from '../../src/domain/errors.js';
import {
  checkDnsLabel,
  checkName,
  DNS_LABEL,
  DNS_LABEL_HELP,
  PRIVILEGE,
  PRIVILEGE_HELP,
  OBJECT_MEMBERS,
  RESOURCE_NAME,
  RESOURCE_NAME_HELP,
  USER_NAME,
  USER_NAME_HELP,
} from '../../src/domain/names.js';

function table(pattern: RegExp, good: string[], bad: string[]): void {
  for (const name of good)
    void test(`accepts ${JSON.stringify(name.slice(0, 40))}`, () => assert.ok(pattern.test(name)));
  for (const name of bad)
    void test(`refuses ${JSON.stringify(name.slice(0, 40))}`, () => assert.ok(!pattern.test(name)));
}

void describe('DNS labels (projects, queues, cohorts, targets)', () => {
  table(
    DNS_LABEL,
    ['a', '0', 'default', 'team-a', 'a1-b2', '9lives', 'a'.repeat(63), 'a' + '-'.repeat(61) + 'b'],
    ['', 'A', 'Team', 'a'.repeat(64), '-a', 'a-', '-', 'a_b', 'a.b', 'a b', 'é', 'a\n', '\na', 'a/b'],
  );

  void test('checkDnsLabel returns the name or throws a 400 naming what and why', () => {
    assert.equal(checkDnsLabel('project name', 'ok-name'), 'ok-name');
    assert.throws(
      () => checkDnsLabel('project name', 'Bad_Name'),
      (e: unknown) =>
        e instanceof BadRequestError &&
        e.status === 400 &&
        e.code === 'bad_request' &&
        e.message === `project name "Bad_Name" ${DNS_LABEL_HELP}`,
    );
  });

  void test('the help text matches the rule: 63 characters, lowercase, digits, inner dashes', () => {
    assert.match(DNS_LABEL_HELP, /1-63 lowercase letters, digits or "-"/);
    fc.assert(
      fc.property(fc.stringMatching(/^[a-z0-9-]{1,70}$/), (s) => {
        const expected = s.length <= 63 && !s.startsWith('-') && !s.endsWith('-');
        assert.equal(DNS_LABEL.test(s), expected, s);
      }),
      { numRuns: 1000 },
    );
  });
});

void describe('resource names', () => {
  table(
    RESOURCE_NAME,
    [
      'cpu',
      'memory',
      'jobs',
      'nvidia.com/gpu',
      'example.com/Foo_bar.baz',
      'a',
      'A',
      'ephemeral-storage',
      'x/y',
      'a.b-c/d',
      'example.com/constructor',
      'constructors',
      'tostring',
    ],
    [
      '',
      'bad name',
      'a/b/c',
      '/cpu',
      'cpu/',
      '-cpu',
      'cpu-',
      '_cpu',
      'Example.com/gpu',
      'gpu!',
      'a'.repeat(64),
      'é',
      // Every plain object has these: a key of one of them found the inherited member (#40).
      ...OBJECT_MEMBERS,
    ],
  );
  void test('the name part is at most 63 characters, the prefix at most 253', () => {
    assert.ok(RESOURCE_NAME.test('a'.repeat(63)));
    assert.ok(!RESOURCE_NAME.test('a'.repeat(64)));
    assert.ok(RESOURCE_NAME.test(`${'p'.repeat(253)}/gpu`));
    assert.ok(!RESOURCE_NAME.test(`${'p'.repeat(254)}/gpu`));
  });
  void test('checkName names the resource rule', () => {
    assert.throws(() => checkName(RESOURCE_NAME, RESOURCE_NAME_HELP, 'quota: resource', 'a b'), {
      name: 'BadRequestError',
      message: `quota: resource "a b" ${RESOURCE_NAME_HELP}`,
    });
  });
});

void describe('user names', () => {
  table(
    USER_NAME,
    ['admin', 'bob', 'a.b_c-d', 'x1', '1', 'a'.repeat(63)],
    ['', 'Bob', '_bob', 'bob_', '.bob', 'bob.', 'b b', 'bob@example.com', 'a'.repeat(64)],
  );
  void test('checkName quotes the name with JSON escaping', () => {
    assert.throws(() => checkName(USER_NAME, USER_NAME_HELP, 'user name', 'a"b'), {
      message: `user name "a\\"b" ${USER_NAME_HELP}`,
    });
  });
});

void describe('privileges', () => {
  table(
    PRIVILEGE,
    ['target.gpu', 'resource.scratch-db', 'a', 'team/a.b_c', 'x'.repeat(253)],
    ['', 'Target.gpu', '.gpu', 'gpu.', '/x', 'x/', 'a b', 'x'.repeat(254)],
  );
  void test('the help text gives examples', () => assert.match(PRIVILEGE_HELP, /target\.gpu/));
});
