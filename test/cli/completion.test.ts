/**
 * Shell completion end to end: the script `berth completion bash` prints, sourced in a real bash,
 * its completion function called as bash calls it at a TAB (COMP_WORDS, COMP_CWORD, COMP_LINE,
 * COMP_POINT set), against a real server with real projects, queues and jobs; the reply is
 * COMPREPLY. Also without a reachable server, and the zsh script in a real zsh when there is one.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { createServer, type Socket } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { berthShellCommand } from '../helpers/berth-command.js';
import { closedPort, fails, ok, useCliServer, type CliResult, SUITE_TIMEOUT_MS } from './cli.js';

const CONFIG = [
  'factories:',
  '  sim: { kind: simulated }',
  'targets:',
  '  sim: { factory: sim }',
  '  big-sim: { factory: sim }',
  'resources:',
  '  licence: { kind: semaphore, capacity: 2 }',
].join('\n');

const ctx = useCliServer(
  async ({ request }) => {
    // Held: its jobs stay queued, so `cancel` has something to offer and nothing runs.
    await request('POST', '/cluster-queues', { name: 'research', quota: { jobs: 10 }, stopPolicy: 'Hold' });
    await request('POST', '/projects', { name: 'ml', clusterQueue: 'research' });
    await request('POST', '/projects', { name: 'vision', clusterQueue: 'research' });
    await request('POST', '/priority-classes', { name: 'urgent', value: 1000 });
  },
  { config: CONFIG },
);

/** A directory with `berth` in it, put first on the PATH of the shells: as an installed berth. */
let binDir = '';
before(() => {
  binDir = join(ctx.sb.root, 'bin');
  mkdirSync(binDir);
  const berth = join(binDir, 'berth');
  writeFileSync(berth, `#!/bin/sh\nexec ${berthShellCommand()} "$@"\n`);
  chmodSync(berth, 0o755);
});

const quote = (s: string): string => `'${s.replace(/'/g, `'\\''`)}'`;

/**
 * COMP_WORDS as bash makes them of `line`: split at blanks, and at = and : (COMP_WORDBREAKS),
 * each run of which is a word of its own; a line ending in a blank has an empty last word.
 */
function compWords(line: string): string[] {
  const words = line
    .split(/\s+/)
    .filter((w) => w !== '')
    .flatMap((w) => w.split(/([=:]+)/).filter((p) => p !== ''));
  return /\s$/.test(line) ? [...words, ''] : words;
}

/** A shell's run: its exit code and output. */
function shell(program: string, args: string[], env: Record<string, string>): Promise<CliResult> {
  const child = spawn(program, args, {
    cwd: ctx.sb.cwd,
    env: {
      PATH: `${binDir}:${process.env.PATH ?? '/usr/bin:/bin'}`,
      HOME: ctx.sb.home,
      XDG_CONFIG_HOME: ctx.sb.config,
      XDG_STATE_HOME: ctx.sb.state,
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr, stdoutBytes: Buffer.from(stdout) }));
  });
}

interface Reply {
  /** COMPREPLY, in its order. */
  words: string[];
  /** What the function asked of `compopt` (e.g. `-o default`: complete file names). */
  compopt: string;
  stderr: string;
}

/**
 * Completes `line` (the cursor at its end) in a non-interactive bash that sourced the script, as
 * bash does at a TAB: the function `complete -p berth` names is called with COMP_* set.
 */
async function tab(line: string, env: Record<string, string> = ctx.connection()): Promise<Reply> {
  const words = compWords(line);
  const script = [
    'source <(berth completion bash) || exit 9',
    // compopt works only inside a real completion; here it records what it was asked.
    'asked=; compopt() { asked="$*"; }',
    'spec=$(complete -p berth) || exit 8',
    'fn=${spec#*-F }; fn=${fn%% *}',
    `COMP_WORDS=(${words.map(quote).join(' ')})`,
    `COMP_CWORD=${words.length - 1}`,
    `COMP_LINE=${quote(line)}`,
    `COMP_POINT=${line.length}`,
    'COMPREPLY=()',
    '"$fn"',
    'printf "%s\\n" "${COMPREPLY[@]}"',
    'printf "compopt:%s\\n" "$asked"',
  ].join('\n');
  const r = await shell('bash', ['-c', script], env);
  assert.equal(r.code, 0, `bash exited ${r.code}: ${r.stderr}`);
  const out = r.stdout.split('\n').filter((l) => l !== '');
  const compopt = out.pop() ?? '';
  assert.match(compopt, /^compopt:/);
  return { words: out, compopt: compopt.slice('compopt:'.length), stderr: r.stderr };
}

/** The reply's words; bash must have printed nothing on stderr. */
async function offered(line: string, env?: Record<string, string>): Promise<string[]> {
  const r = await tab(line, env);
  assert.equal(r.stderr, '', `stderr of completing ${JSON.stringify(line)}`);
  return r.words;
}

const sorted = (words: string[]): string[] => [...words].sort();

/** `berth ARGS…` in the sandbox through the same wrapper as the shells. */
const berth = (args: string[], env: Record<string, string> = ctx.connection()) =>
  shell(join(binDir, 'berth'), args, env);

describe(
  'berth completion bash, in a real bash, against a real server',
  { timeout: SUITE_TIMEOUT_MS },
  () => {
    it('completes commands and flags from the CLI itself', async () => {
      assert.deepEqual(await offered('berth su'), ['submit']);
      assert.deepEqual(await offered('berth submit --tar'), ['--target']);
      assert.deepEqual(sorted(await offered('berth queue ')), [
        'create',
        'delete',
        'drain',
        'help',
        'hold',
        'list',
        'pending',
        'resume',
        'show',
        'update',
      ]);
    });

    it('offers the projects that exist, also after --project= (bash splits at =)', async () => {
      assert.deepEqual(sorted(await offered('berth project use ')), ['default', 'ml', 'vision']);
      // Readline replaces what follows the =: the candidates are the names alone.
      assert.deepEqual(sorted(await offered('berth submit --project=')), ['default', 'ml', 'vision']);
      assert.deepEqual(await offered('berth submit --project=v'), ['vision']);
      assert.deepEqual(await offered('berth jobs --project m'), ['ml']);
    });

    it('offers queues, targets, priority classes and resource types by name', async () => {
      assert.deepEqual(sorted(await offered('berth queue pending ')), ['default', 'research']);
      assert.deepEqual(sorted(await offered('berth submit --target ')), ['big-sim', 'sim']);
      assert.deepEqual(await offered('berth submit --priority u'), ['urgent']);
      assert.deepEqual(await offered('berth submit --resource l'), ['licence']);
    });

    it('offers the ids of the jobs just submitted, newest first; cancel only unfinished ones', async () => {
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) {
        const out = ok(await berth(['submit', '--project', 'ml', '-o', 'json', '--', 'true']));
        ids.push(String((JSON.parse(out) as { id: number }).id));
      }
      const ml = { ...ctx.connection(), BERTH_PROJECT: 'ml' };
      const newestFirst = [...ids].reverse();
      assert.deepEqual(await offered('berth logs ', ml), newestFirst);
      assert.deepEqual(await offered('berth status ', ml), newestFirst);
      // --project on the line chooses whose jobs, over BERTH_PROJECT.
      assert.deepEqual(await offered('berth submit --project ml --after ', ctx.connection()), newestFirst);
      assert.deepEqual(await offered('berth submit --project vision --after ', ml), []);
      ok(await berth(['cancel', ids[0]!]));
      assert.deepEqual(await offered('berth cancel ', ml), newestFirst.slice(0, 2));
      assert.deepEqual(await offered(`berth cancel ${ids[2]} `, ml), newestFirst.slice(0, 2));
    });

    it('leaves file names and the job’s own command to the shell', async () => {
      const config = await tab('berth server --config ');
      assert.deepEqual([config.words, config.compopt, config.stderr], [[], '-o default', '']);
      const command = await tab('berth submit -- pyth');
      assert.deepEqual([command.words, command.compopt], [[], '-o default']);
      // A value berth cannot know: nothing, and no file names either.
      const name = await tab('berth submit --name ');
      assert.deepEqual([name.words, name.compopt], [[], '']);
    });
  },
);

describe('completion without a server', { timeout: SUITE_TIMEOUT_MS }, () => {
  /** A server that accepts connections and never answers. */
  const sockets = new Set<Socket>();
  const silent = createServer((s) => sockets.add(s));
  before(() => new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve)));
  after(() => {
    for (const s of sockets) s.destroy();
    silent.close();
  });

  it('still completes commands and flags, with nothing on stderr, when the server is down', async () => {
    const down = { BERTH_URL: `http://127.0.0.1:${await closedPort()}`, BERTH_TOKEN: 'nope' };
    assert.deepEqual(await offered('berth su', down), ['submit']);
    assert.deepEqual(await offered('berth logs --fo', down), ['--follow']);
    assert.deepEqual(await offered('berth project use ', down), []);
    // No server found at all (no BERTH_URL, no context, no local server).
    assert.deepEqual(await offered('berth project ', {}), await offered('berth project '));
    assert.deepEqual(await offered('berth logs ', {}), []);
    // The hidden command itself: the directive only, exit 0, silent on stderr.
    const r = await berth(['__complete', '--', 'project', 'use', ''], down);
    assert.deepEqual([r.code, r.stdout, r.stderr], [0, ':done\n', '']);
  });

  it('gives up on a server that does not answer after its time limit, not the request’s 30 s', async () => {
    const address = silent.address();
    assert.ok(address && typeof address === 'object');
    const mute = { BERTH_URL: `http://127.0.0.1:${address.port}`, BERTH_TOKEN: 'x' };
    const started = Date.now();
    assert.deepEqual(await offered('berth project use ', mute), []);
    const seconds = (Date.now() - started) / 1000;
    assert.ok(sockets.size > 0, 'berth asked the silent server');
    assert.ok(seconds < 15, `completion took ${seconds} s`);
  });
});

describe('berth completion, the command', () => {
  it('prints a script for bash and for zsh; any other shell is a usage error', async () => {
    assert.match(ok(await berth(['completion', 'bash'])), /complete .*-F _berth_complete berth/);
    assert.match(ok(await berth(['completion', 'zsh'])), /^#compdef berth\n/);
    fails(await berth(['completion', 'fish']), 2, /'fish' is invalid .* bash, zsh/);
  });

  it('says how to install it; __complete is not listed', async () => {
    const help = ok(await berth(['completion', '--help']));
    assert.match(help, /source <\(berth completion bash\)/);
    assert.match(help, /bash-completion\/completions\/berth/);
    assert.match(help, /_berth/);
    const top = ok(await berth(['--help']));
    assert.match(top, /completion/);
    assert.doesNotMatch(top, /__complete/);
  });
});

const hasZsh = spawnSync('sh', ['-c', 'command -v zsh']).status === 0;

describe('berth completion zsh, in a real zsh', { timeout: SUITE_TIMEOUT_MS }, () => {
  it(
    'loads after compinit and registers _berth; its function offers what berth prints',
    { skip: hasZsh ? false : 'zsh is not installed here (the tests do not install it)' },
    async () => {
      // _describe and _files work only inside a real completion: stand-ins print what they get.
      const script = [
        'autoload -U compinit && compinit -u || exit 9',
        'source <(berth completion zsh) || exit 8',
        'print -r -- "registered:${_comps[berth]}"',
        '_describe() { print -rl -- "${(@P)${@[-1]}}" }',
        '_files() { print -r -- "files" }',
        'words=(berth project use ""); CURRENT=4; _berth',
        'words=(berth logs --fo); CURRENT=3; _berth',
        'words=(berth server --config ""); CURRENT=4; _berth',
      ].join('\n');
      const r = await shell('zsh', ['-f', '-c', script], ctx.connection());
      assert.equal(r.stderr, '');
      assert.equal(r.code, 0);
      const lines = r.stdout.trimEnd().split('\n');
      assert.equal(lines[0], 'registered:_berth');
      // VALUE:DESCRIPTION, as _describe takes them.
      const projects = lines.filter((l) => /^(default|ml|vision):/.test(l));
      assert.deepEqual(sorted(projects.map((l) => l.split(':')[0]!)), ['default', 'ml', 'vision']);
      assert.ok(projects.includes('ml:cluster queue research'), r.stdout);
      assert.ok(
        lines.some((l) => l.startsWith('--follow:keep printing output')),
        r.stdout,
      );
      assert.equal(lines.at(-1), 'files');
    },
  );
});
