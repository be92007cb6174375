/**
 * Runs Slurm's commands (sbatch, squeue, scancel) in a small helper process rather than in the
 * server: forking the server for each command costs it far more than forking a small process
 * does (its page tables are copied, and every page it writes afterwards faults once), and a slurm
 * factory with direct workers runs an sbatch for every job. The helper is started on first use,
 * serves any number of commands at once over IPC, and is started again if it dies.
 */
import { execFile, fork, type ChildProcess, type ExecFileException } from 'node:child_process';

export interface RunRequest {
  command: string;
  args: string[];
  /** The command's whole environment. */
  env: Record<string, string | undefined>;
  stdin: string;
  timeoutMs: number;
  maxBuffer: number;
}

interface RunMessage extends RunRequest {
  id: number;
}

/** How a command failed, as execFile says it (what commandError in slurm-cli.ts reads). */
export interface RunFailure {
  code: string | number | null;
  killed: boolean;
  signal: string | null;
  message: string;
}

export interface RunResult {
  stdout: string;
  stderr: string;
  error?: RunFailure;
}

interface ResultMessage extends RunResult {
  id: number;
}

const RUNNER_MAIN = new URL(
  `./command-runner-main${import.meta.url.endsWith('.ts') ? '.ts' : '.js'}`,
  import.meta.url,
);

/** The server's side: sends commands to the helper, which it starts and restarts as needed. */
export class CommandRunner {
  private child: ChildProcess | undefined;
  private nextId = 1;
  private readonly pending = new Map<number, (r: RunResult) => void>();

  run(req: RunRequest): Promise<RunResult> {
    const child = (this.child ??= this.start());
    const id = this.nextId++;
    return new Promise((resolve) => {
      this.pending.set(id, resolve);
      child.send({ ...req, id } satisfies RunMessage, (err) => {
        if (err) this.settle(id, failure(`the command runner cannot be reached: ${err.message}`));
      });
    });
  }

  private settle(id: number, r: RunResult): void {
    const resolve = this.pending.get(id);
    this.pending.delete(id);
    resolve?.(r);
  }

  private start(): ChildProcess {
    const child = fork(RUNNER_MAIN, [], {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      execArgv: process.execArgv,
    });
    child.on('message', (m: ResultMessage) => this.settle(m.id, m));
    child.on('error', () => undefined); // its exit follows, and fails what was pending
    child.once('exit', (code, signal) => {
      if (this.child === child) this.child = undefined;
      for (const id of [...this.pending.keys()])
        this.settle(id, failure(`the command runner exited (${signal ?? `code ${code}`})`));
    });
    // The server may exit while the helper idles.
    child.unref();
    child.channel?.unref();
    return child;
  }

  close(): void {
    this.child?.kill();
    this.child = undefined;
  }
}

function failure(message: string): RunResult {
  return { stdout: '', stderr: '', error: { code: null, killed: false, signal: null, message } };
}

/** The helper's side (command-runner-main.ts): runs each command it is sent, answers with the result. */
export function serveCommands(): void {
  process.on('message', (m: RunMessage) => {
    const child = execFile(
      m.command,
      m.args,
      { env: m.env, timeout: m.timeoutMs, killSignal: 'SIGKILL', maxBuffer: m.maxBuffer, encoding: 'utf8' },
      (error: ExecFileException | null, stdout, stderr) => {
        const result: ResultMessage = { id: m.id, stdout, stderr };
        if (error)
          result.error = {
            code: error.code ?? null,
            killed: error.killed ?? false,
            signal: error.signal ?? null,
            message: error.message,
          };
        process.send?.(result);
      },
    );
    // A command that exits without reading stdin makes this EPIPE; its exit status says why.
    child.stdin?.on('error', () => undefined);
    child.stdin?.end(m.stdin);
  });
  // The server is gone: so is the helper.
  process.on('disconnect', () => process.exit(0));
}
