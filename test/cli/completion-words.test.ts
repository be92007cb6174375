/**
 * Shell completion's pure part on berth's real command tree: given the words of a line, what is
 * being completed (fixed candidates, names from the server, files, or nothing), and the lines
 * `berth __complete` prints for it.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Command } from 'commander';
import { ARGUMENTS, FLAGS } from '../../src/cli/completion/kinds.js';
import { completionLines, DONE, FILES } from '../../src/cli/completion/lines.js';
import { analyse, type Completion } from '../../src/cli/completion/words.js';
import { buildProgram } from '../../src/cli/program.js';

const program = buildProgram();

/** `berth project use ` → ['project', 'use', '']: the last word is the one being typed. */
const words = (line: string): string[] => line.split(' ');

/** The values printed for fixed candidates, without descriptions and the directive. */
function offered(c: Completion): string[] {
  assert.equal(c.wanted.type, 'fixed', `expected fixed candidates, got ${JSON.stringify(c.wanted)}`);
  const lines = completionLines(c, c.wanted.type === 'fixed' ? c.wanted.candidates : []);
  assert.equal(lines.at(-1), DONE);
  return lines.slice(0, -1).map((l) => l.split('\t')[0]!);
}

const complete = (line: string): Completion => analyse(program, words(line));

describe('completion: commands and flags from the command tree', () => {
  const cases: [line: string, expected: string[]][] = [
    ['su', ['submit']],
    [
      'project ',
      ['create', 'list', 'show', 'use', 'update', 'delete', 'member', 'grant', 'revoke', 'registry', 'help'],
    ],
    ['project member ', ['add', 'remove', 'help']],
    ['queue h', ['hold', 'help']],
    ['submit --ta', ['--target']],
    ['submit --after', ['--after', '--after-any', '--after-failed']],
    ['--', ['--version', '--help']],
    // Options before a subcommand are berth's own; after it, the subcommand's.
    ['logs -', ['--follow', '--attempt', '--project', '--help']],
    ['help pro', ['project']],
    ['project help u', ['use', 'update']],
    // Commander's own choices: -o everywhere, a queue's policies, the shells.
    ['submit -o ', ['table', 'json']],
    ['jobs --output=j', ['--output=json']],
    ['store copy -o ', ['json']],
    ['queue update q --strategy B', ['BestEffortFIFO', 'Backfill']],
    ['completion ', ['bash', 'zsh']],
    // A list completes after its last comma, and offers no item twice.
    ['jobs --state queued,r', ['queued,running']],
    [
      'jobs --state queued,running,',
      [
        'queued,running,admitted',
        'queued,running,succeeded',
        'queued,running,failed',
        'queued,running,cancelled',
      ],
    ],
    // Nothing more to name: its flags.
    ['status 12 --o', ['--output']],
  ];
  for (const [line, expected] of cases) {
    it(`berth ${line}<TAB> → ${expected.join(' ')}`, () => {
      assert.deepEqual(offered(complete(line)), expected);
    });
  }

  it('hidden commands stay hidden; the rest are all offered with their descriptions', () => {
    const c = complete('');
    const values = offered(c);
    assert.ok(!values.includes('__complete'), values.join(' '));
    for (const name of ['server', 'submit', 'jobs', 'logs', 'project', 'queue', 'completion', 'help'])
      assert.ok(values.includes(name), `${name} missing from ${values.join(' ')}`);
    const lines = completionLines(c, c.wanted.type === 'fixed' ? c.wanted.candidates : []);
    assert.ok(lines.includes('submit\tsubmit a job to the current project'), lines.join('\n'));
  });

  it('after an empty word, a command without arguments offers its flags', () => {
    const values = offered(complete('jobs '));
    assert.ok(values.includes('--state') && values.includes('--project'), values.join(' '));
  });

  it('an unknown command completes nothing', () => {
    assert.deepEqual(complete('frobnicate ').wanted, { type: 'nothing' });
  });
});

describe('completion: values that are names, files or the job’s own command', () => {
  const cases: [line: string, wanted: Completion['wanted']][] = [
    ['logs ', { type: 'names', kind: 'job' }],
    ['status ', { type: 'names', kind: 'job' }],
    ['artifacts ', { type: 'names', kind: 'job' }],
    ['cancel ', { type: 'names', kind: 'unfinished-job' }],
    ['cancel 12 13 ', { type: 'names', kind: 'unfinished-job' }],
    ['submit --project ', { type: 'names', kind: 'project' }],
    ['submit --target ', { type: 'names', kind: 'target' }],
    ['submit --priority h', { type: 'names', kind: 'priority' }],
    ['submit --resource ', { type: 'names', kind: 'resource' }],
    ['submit --after-failed ', { type: 'names', kind: 'job' }],
    ['project use ', { type: 'names', kind: 'project' }],
    ['project show ', { type: 'names', kind: 'project' }],
    ['project member add ml ', { type: 'names', kind: 'user' }],
    ['project create ml --queue ', { type: 'names', kind: 'queue' }],
    ['queue show ', { type: 'names', kind: 'queue' }],
    ['queue pending ', { type: 'names', kind: 'queue' }],
    ['priority delete ', { type: 'names', kind: 'priority' }],
    ['context use ', { type: 'names', kind: 'context' }],
    ['user token ', { type: 'names', kind: 'user' }],
    // create makes a new name: nothing to offer.
    ['project create ', { type: 'nothing' }],
    ['queue create ', { type: 'nothing' }],
    // The shell completes file names.
    ['server --config ', { type: 'files' }],
    ['server --data-dir ', { type: 'files' }],
    ['login --url u --token t --ca ', { type: 'files' }],
    ['simulate ', { type: 'files' }],
    // After -- (or the command's first word) comes the job's own command: berth reads none of it.
    ['submit -- ', { type: 'files' }],
    ['submit --name x -- --ta', { type: 'files' }],
    ['submit -- python train.py --ep', { type: 'files' }],
    ['submit sh --ta', { type: 'files' }],
    ['submit --target gpu ', { type: 'files' }],
    // A value of a flag that takes any text.
    ['submit --name ', { type: 'nothing' }],
  ];
  for (const [line, wanted] of cases) {
    it(`berth ${line}<TAB> → ${wanted.type === 'names' ? wanted.kind : wanted.type}`, () => {
      assert.deepEqual(complete(line).wanted, wanted);
    });
  }

  it('--flag=value and lists keep what comes before the value as the stem', () => {
    const c = complete('submit --project=m');
    assert.deepEqual([c.stem, c.partial], ['--project=', 'm']);
    const list = complete('submit --after 3,4');
    assert.deepEqual([list.stem, list.partial, list.taken], ['3,', '4', ['3']]);
    const lines = completionLines(list, [
      { value: '3' },
      { value: '41', description: 'train (running)' },
      { value: '5' },
    ]);
    assert.deepEqual(lines, ['3,41\ttrain (running)', DONE]);
  });

  it('remembers the values of flags given before (the jobs offered are --project’s)', () => {
    assert.deepEqual(complete('jobs --project ml --state ').given, { '--project': 'ml' });
    assert.deepEqual(complete('submit --project=ml --after ').given, { '--project': 'ml' });
  });

  it('keeps each candidate on one line: tabs and line breaks in a description become spaces', () => {
    const c = complete('project use ');
    assert.deepEqual(completionLines(c, [{ value: 'ml', description: 'models\tand\n  more' }]), [
      'ml\tmodels and more',
      DONE,
    ]);
  });

  it('asks the shell for files with the :files directive, and prints nothing else', () => {
    assert.deepEqual(completionLines(complete('submit -- '), []), [FILES]);
  });
});

describe('completion: the table of value kinds names real flags and arguments', () => {
  /** Every command of the tree with its path from the root. */
  function* commands(cmd: Command, path: string[] = []): Generator<[string[], Command]> {
    yield [path, cmd];
    for (const sub of cmd.commands) yield* commands(sub, [...path, sub.name()]);
  }
  const all = [...commands(program)];

  it('every flag in the table is a flag of some command', () => {
    const longs = new Set(all.flatMap(([, c]) => c.options.map((o) => o.long)));
    for (const flag of Object.keys(FLAGS)) assert.ok(longs.has(flag), `no command has ${flag}`);
  });

  it('every argument in the table is an argument of its command', () => {
    const args = new Map(
      all.map(([path, c]) => [path.join(' '), c.registeredArguments.map((a) => a.name())]),
    );
    const anywhere = new Set([...args.values()].flat());
    for (const [path, entries] of Object.entries(ARGUMENTS)) {
      for (const name of Object.keys(entries)) {
        const known = path === '*' ? anywhere.has(name) : args.get(path)?.includes(name);
        assert.ok(known, `no argument <${name}> in berth ${path}`);
      }
    }
  });
});
