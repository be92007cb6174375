/** Saving the current project: in the current context, or in one created for a local server. */
import { saveConfig, type UserConfig } from './config.js';
import type { Connection } from './connection.js';
import { CliError } from './errors.js';

/** Fails early when the project cannot be remembered (the server came from BERTH_URL). */
export function checkCanRemember(conn: Connection, project: string): void {
  if (conn.source === 'env') {
    throw new CliError(
      `BERTH_URL is set, so there is no context to remember the project in; pass --project ${project} or set BERTH_PROJECT=${project}`,
    );
  }
}

function freeLocalName(config: UserConfig, dataDir: string): string {
  for (let i = 1; ; i++) {
    const name = i === 1 ? 'local' : `local-${i}`;
    const existing = config.contexts[name];
    if (!existing || ('dataDir' in existing && existing.dataDir === dataDir)) return name;
  }
}

/**
 * Makes `project` current and returns the name of the context that holds it. A local user
 * without a context gets one (`local`, pointing at the server's data directory) implicitly.
 */
export function rememberProject(conn: Connection, project: string): string {
  checkCanRemember(conn, project);
  const config = conn.config;
  let name = conn.contextName;
  if (name) {
    const context = config.contexts[name];
    if (context) context.project = project;
  } else {
    if (!conn.dataDir) throw new CliError('no context to remember the project in; run `berth login` first');
    name = freeLocalName(config, conn.dataDir);
    config.contexts[name] = { dataDir: conn.dataDir, project };
    config.current = name;
  }
  saveConfig(config);
  return name;
}

/** After `project delete`: a context must not keep pointing at a project that is gone. */
export function forgetProject(conn: Connection, project: string): boolean {
  const context = conn.contextName ? conn.config.contexts[conn.contextName] : undefined;
  if (!context || context.project !== project) return false;
  delete context.project;
  saveConfig(conn.config);
  return true;
}
