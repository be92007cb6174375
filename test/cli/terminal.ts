/**
 * A person's trial of an interactive job in a real terminal (tmux), as issue #42 asks it, shared by
 * the local factory's test and Slurm's: `berth run -it OPTIONS -- sh` — the prompt comes, `stty
 * size` follows a resize, ^C stops a `sleep` and not the shell; the terminal is closed and the job
 * runs on; `berth attach` takes the same shell back (its output first, its variables kept), and
 * `exit 7` makes berth exit 7 and fails the job with code 7.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { berthShellCommand } from '../helpers/berth-command.js';
import { getJob, waitDone } from '../helpers/jobs.js';
import { waitFor } from '../helpers/wait.js';
import type { CliServer } from './cli.js';

export const hasTmux = spawnSync('tmux', ['-V']).status === 0;

export /** A terminal of its own (a tmux server on a socket of this test's), running one shell command. */
class Terminal {
  private static next = 0;
  private readonly socket = `berth-test-${process.pid}-${Terminal.next++}`;

  constructor(cli: CliServer, command: string, token?: string) {
    const env = Object.entries({
      ...cli.connection(token),
      HOME: cli.sb.home,
      XDG_CONFIG_HOME: cli.sb.config,
    })
      .map(([k, v]) => `${k}='${v}'`)
      .join(' ');
    // After berth ends, its exit code stays on the screen, and the pane stays open to read it.
    const line = `env ${env} ${berthShellCommand()} ${command}; echo "EXIT=$?"; sleep 600`;
    this.tmux('new-session', '-d', '-x', '100', '-y', '30', line);
  }

  tmux(...args: string[]): string {
    return execFileSync('tmux', ['-L', this.socket, ...args], { encoding: 'utf8' });
  }

  type(keys: string): void {
    this.tmux('send-keys', '-l', keys);
    this.tmux('send-keys', 'Enter');
  }

  screen(): string {
    return this.tmux('capture-pane', '-p', '-J', '-S', '-100');
  }

  /** Waits until the screen matches `pattern`; returns the match. */
  shows(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray> {
    return waitFor(`${pattern} on the terminal`, () => this.screen().match(pattern) ?? undefined, timeoutMs);
  }

  /** SIGKILL to berth itself (the pane's shell's child): a dropped connection, as a lost laptop's. */
  killClient(): void {
    const shell = this.tmux('display-message', '-p', '#{pane_pid}').trim();
    execFileSync('pkill', ['-KILL', '-P', shell]);
  }

  close(): void {
    spawnSync('tmux', ['-L', this.socket, 'kill-server']);
  }
}

/** The id of the newest job of `project`. */
export async function newestJob(cli: CliServer, project = 'default'): Promise<number> {
  const jobs = await cli.request<{ id: number }[]>('GET', `/projects/${project}/jobs?limit=1`);
  assert.ok(jobs[0], 'a job was submitted');
  return jobs[0].id;
}

/** The trial, with `options` (each followed by a space) for berth run. */
export async function terminalTrial(cli: CliServer, options = ''): Promise<void> {
  const t = new Terminal(cli, `run -it ${options}-- sh`);
  try {
    await t.shows(/\$ $/m);
    t.type('stty size');
    await t.shows(/^30 100$/m);
    t.tmux('resize-window', '-x', '120', '-y', '40');
    t.type('stty size');
    await t.shows(/^40 120$/m);
    t.type('sleep 300');
    // ^C until the prompt is back: one typed before the shell has made sleep its foreground
    // would reach the shell alone, and sleep would run on.
    let pressed = 0;
    await waitFor('^C to stop the sleep and give the prompt back', () => {
      if (Date.now() - pressed > 500) {
        t.tmux('send-keys', 'C-c');
        pressed = Date.now();
      }
      return /sleep 300\n[\s\S]*\^C[\s\S]*\$ $/.test(t.screen().replace(/\n+$/, ''));
    });
    t.type('echo "alive $((6 * 7))"; X=remembered');
    await t.shows(/^alive 42$/m);
    const id = await newestJob(cli);
    // The person's terminal closes (a closed window: berth gets its hang-up and its input ends);
    // the job runs on, its shell not sent an end of file.
    t.close();
    const job = await getJob(cli.server.api, cli.server.adminToken, id);
    assert.equal(job.state, 'running', 'the job outlives its client');

    const back = new Terminal(cli, `attach -it ${id}`);
    try {
      // Its last output first, then the same shell: its variable is still set.
      await back.shows(/alive 42/);
      back.type('echo "X is $X"');
      await back.shows(/^X is remembered$/m);
      back.type('exit 7');
      await back.shows(/^EXIT=7$/m);
    } finally {
      back.close();
    }
    const done = await waitDone(cli.server.api, cli.server.adminToken, id);
    assert.equal(done.state, 'failed');
    assert.equal(done.exitCode, 7);
  } finally {
    t.close();
  }
}
