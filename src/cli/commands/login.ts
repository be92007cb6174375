/** `berth login` and `berth whoami`. */
import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import type { Health } from '../../domain/health.js';
import type { WhoAmI } from '../api-types.js';
import { ApiClient } from '../client.js';
import { isUrlContext, loadConfig, saveConfig } from '../config.js';
import { normalizeUrl } from '../connection.js';
import { CliError, UsageError } from '../errors.js';
import { fields, yesNo, type Cell } from '../output.js';
import { clientCommand, examples, openSession, printer, type CommonFlags } from '../session.js';
import { loadTrustFile, readTrustFile, type TrustFile } from '../trust-file.js';

interface LoginFlags extends CommonFlags {
  url: string;
  token: string;
  name?: string;
  ca?: string;
}

function readToken(flag: string): string {
  const token = (flag === '-' ? readFileSync(0, 'utf8') : flag).trim();
  if (!token) throw new UsageError('--token: the token is empty');
  return token;
}

const projectLine = (project: string, origin: string) =>
  origin === 'default' ? project : `${project} (from ${origin})`;

/** The CA login checks with and saves: --ca, else BERTH_CA, else the one the context had. */
function loginTrust(
  flag: string | undefined,
  saved: string | undefined,
  name: string,
): TrustFile | undefined {
  return (
    readTrustFile(flag, process.env.BERTH_CA) ??
    (saved ? loadTrustFile(saved, `context "${name}"`) : undefined)
  );
}

export function registerLoginCommands(program: Command): void {
  examples(
    clientCommand(program, 'login', 'check a server URL and token, and save them as the current context')
      .requiredOption('--url <url>', 'the berth server, e.g. https://berth.example.com')
      .requiredOption('--token <token>', 'your API token; "-" reads it from standard input')
      .option('--name <context>', "context name (default: the URL's host:port)")
      .option(
        '--ca <file>',
        "PEM certificates to trust for the server's (a private CA, or the server's own certificate), besides Node's built-in CAs; saved in the context (default: $BERTH_CA, else the context's)",
      ),
    [
      'berth login --url https://berth.example.com --token "$TOKEN"',
      'berth login --url https://berth.internal:7070 --token "$TOKEN" --ca ./berth-ca.pem',
      'pass show berth | berth login --url https://berth.example.com --token - --name work',
    ],
  ).action(async (f: LoginFlags) => {
    const url = normalizeUrl(f.url);
    if (!url) throw new UsageError(`--url: "${f.url}" is not an http:// or https:// URL`);
    const token = readToken(f.token);
    const name = f.name ?? new URL(url).host;
    const config = loadConfig();
    const old = config.contexts[name];
    const same = old && isUrlContext(old) && old.url === url ? old : undefined;
    const ca = loginTrust(f.ca, same?.ca, name);
    const me = await new ApiClient(url, token, {
      tokenSource: '--token',
      ...(ca ? { ca: { certificates: ca.certificates, source: ca.file } } : {}),
    }).get<WhoAmI>('/whoami');
    if (me.kind !== 'user') throw new CliError('that is a job token; log in with a user token');
    const project = same?.project;
    config.contexts[name] = { url, token, ...(project ? { project } : {}), ...(ca ? { ca: ca.file } : {}) };
    config.current = name;
    saveConfig(config);
    printer(f).show(
      me,
      () => `logged in to ${url} as ${me.name}${me.admin ? ' (admin)' : ''}; context ${name} is now current`,
    );
  });

  clientCommand(program, 'whoami', 'who you are, on which server, in which project', {
    project: true,
  }).action(async (f: CommonFlags) => {
    const s = openSession(f);
    const me = await s.client.get<WhoAmI>('/whoami');
    const health = await s.client.get<Health>('/health');
    const replica =
      health.role === 'leader'
        ? `leader (term ${health.term})`
        : `follower; ${health.leader ? `the leader is ${health.leader}` : 'no replica leads now (an election is under way)'}`;
    s.show(me, () =>
      fields([
        ...(me.kind === 'user'
          ? ([
              ['user', me.name],
              ['admin', yesNo(me.admin)],
            ] as [string, Cell][])
          : ([['job', me.job]] as [string, Cell][])),
        ['server', s.connection.url],
        ['replica', replica],
        ['via', s.connection.origin],
        ...(s.connection.ca
          ? ([['ca', `${s.connection.ca.file} (from ${s.connection.ca.origin})`]] as [string, Cell][])
          : []),
        ['project', projectLine(s.project, s.connection.projectOrigin)],
      ]),
    );
  });
}
