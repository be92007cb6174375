/**
 * A submission made into a spec (service/jobs/job-spec.ts), pure, from tables: a target's
 * defaults apply only to what the job did not say, and its timeline note says which applied.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  buildSpec,
  defaultName,
  withTargetDefaults,
  type SubmitInput,
  type TargetDefaults,
} from '../../src/service/jobs/job-spec.js';

describe("a target's defaults on a submission", () => {
  it('fill what the job left out, keep what it gave, and say which', () => {
    const defaults: TargetDefaults = {
      defaultTimeoutSeconds: 600,
      defaultRequests: { memory: '1Gi', cpu: '1' },
    };
    for (const [input, timeout, requests, note] of [
      [
        {},
        600,
        { memory: '1Gi', cpu: '1' },
        "; timeout 10m, target t's defaultTimeout; requests memory=1Gi, cpu=1, target t's defaultRequests",
      ],
      [
        { timeoutSeconds: 5 },
        5,
        { memory: '1Gi', cpu: '1' },
        "; requests memory=1Gi, cpu=1, target t's defaultRequests",
      ],
      [
        { requests: { memory: '2Gi' } },
        600,
        { memory: '2Gi', cpu: '1' },
        "; timeout 10m, target t's defaultTimeout; requests cpu=1, target t's defaultRequests",
      ],
      [
        { timeoutSeconds: 5, requests: { memory: '64Mi', cpu: '500m' } },
        5,
        { memory: '64Mi', cpu: '500m' },
        '',
      ],
    ] as const) {
      const got = withTargetDefaults(buildSpec({ command: ['true'], ...input }), 't', defaults);
      assert.deepEqual(
        [got.spec.timeoutSeconds, got.spec.requests, got.note],
        [timeout, requests, note],
        JSON.stringify(input),
      );
    }
  });

  it('change nothing where the target has none', () => {
    const spec = buildSpec({ command: ['true'], requests: { cpu: 2 } });
    for (const defaults of [undefined, {}])
      assert.deepEqual(withTargetDefaults(spec, 't', defaults), { spec, note: '' });
  });
});

describe('an image on a submission', () => {
  it('is written out in full; a command may then be left out (the image runs its own)', () => {
    const rows: [SubmitInput, string, string[]][] = [
      [{ image: 'busybox', command: ['ls'] }, 'docker.io/library/busybox:latest', ['ls']],
      [{ image: '127.0.0.1:5000/team/app:2' }, '127.0.0.1:5000/team/app:2', []],
      [
        { image: `reg.example.org/a/b@sha256:${'ab'.repeat(32)}`, script: 'ls' },
        `reg.example.org/a/b@sha256:${'ab'.repeat(32)}`,
        ['/bin/sh', '-c', 'ls'],
      ],
    ];
    for (const [input, image, command] of rows) {
      const spec = buildSpec(input);
      assert.deepEqual([spec.image, spec.command], [image, command], JSON.stringify(input));
    }
    assert.equal('image' in buildSpec({ command: ['ls'] }), false, 'absent when not asked for');
  });

  it('is refused with 400 saying why when it is not a reference; no command and no image is refused too', () => {
    const rows: [SubmitInput, RegExp][] = [
      [
        { image: 'Team/App', command: ['ls'] },
        /^image "Team\/App": "Team" is not a repository name component/,
      ],
      [{ image: 'app:-1', command: ['ls'] }, /^image "app:-1": tag "-1" is not/],
      [{ image: 'app@sha256:12' }, /^image "app@sha256:12": digest "sha256:12" is not sha256:/],
      [{}, /^a job needs a command \(argv list\) or a script$/],
      [{ command: [''], image: 'app' }, /^command: its first element \(the program\) is empty$/],
    ];
    for (const [input, message] of rows)
      assert.throws(
        () => buildSpec(input),
        (e: Error & { statusCode?: number }) => {
          assert.match(e.message, message);
          return true;
        },
      );
  });

  it("comes from the target's image when the job names none, which its timeline says", () => {
    const defaults: TargetDefaults = { image: 'reg.example.org/base:1' };
    const given = withTargetDefaults(buildSpec({ command: ['ls'], image: 'other' }), 't', defaults);
    assert.equal(given.spec.image, 'docker.io/library/other:latest');
    assert.equal(given.note, '');
    const taken = withTargetDefaults(buildSpec({ command: ['ls'] }), 't', defaults);
    assert.equal(taken.spec.image, 'reg.example.org/base:1');
    assert.equal(taken.note, "; image reg.example.org/base:1, target t's image");
  });

  it("names a job that runs the image's own command after the image", () => {
    assert.equal(defaultName([], '127.0.0.1:5000/team/app:2'), 'app');
    assert.equal(defaultName([], `reg.example.org/a/tool@sha256:${'ab'.repeat(32)}`), 'tool');
    assert.equal(defaultName(['python3', 'x.py'], '127.0.0.1:5000/team/app:2'), 'python3');
  });
});
