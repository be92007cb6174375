/**
 * `GET /jobs/{id}/exec?command=…&command=…&rank=R`, upgraded to a WebSocket (@fastify/websocket,
 * over ws): a command run inside a running job (service/jobs/job-exec.ts), its streams carried in
 * binary frames whose first byte names the channel, as Kubernetes' exec protocol
 * (channel.k8s.io) does:
 *
 *   client → server   0 + bytes: its stdin        255, 0: its stdin is closed
 *                     4 + JSON {cols, rows}: its terminal's new size (with `tty=true`)
 *   server → client   1 + bytes: its stdout       2 + bytes: its stderr
 *                     3 + JSON {exitCode, signal, message?}: how it ended; then a close (1000)
 *
 * With `tty=true&cols=C&rows=R` the command has a terminal of its own (agent/pty.ts on the agent's
 * side): its stdout and stderr come as one, on channel 1, and ^C (a byte 3 on stdin) interrupts
 * what runs in its foreground, as on any terminal.
 *
 * `GET /jobs/{id}/attach?cols=C&rows=R` carries an interactive job's own terminal the same way
 * (agent/job-terminal.ts): its status frame comes when the job ends (its exit code) or when
 * another attach took the terminal over (a message, no code).
 *
 * On a replica that does not lead, the session is opened on the leader, whose agent host holds the
 * job, and carried there frame by frame (socket-forward.ts).
 *
 * Who may, and the job's state, are checked before the upgrade: a refusal is an ordinary HTTP
 * answer (4xx with its message). A frame the protocol does not know (text, an unknown channel,
 * an empty one) closes the connection with 1008 and ends the command; one larger than 1 MiB, 1009
 * (ws's own). A client that goes away ends the command.
 */
import type { FastifyRequest } from 'fastify';
import type { WebSocket } from 'ws';
import { running, type ServiceContext } from '../../service/context.js';
import { openExec, type ExecSession, type TerminalSize } from '../../service/jobs/job-exec.js';
import { EXEC_CHANNEL, MAX_TERMINAL_SIDE, type SessionLimits } from '../../domain/exec-protocol.js';
import { TooManyRequestsError } from '../../domain/errors.js';
import type { Principal } from '../../domain/user.js';
import { SessionBounds } from '../session-bounds.js';
import { leaderFor, openOnLeader, pipeSockets } from '../socket-forward.js';
import { AttachQuery, ExecQuery, ForwardQuery, JobParams } from '../job-schemas.js';
import type { Router } from './types.js';

/** What each upgrade request was allowed to start, checked before its upgrade. */
const allowed = new WeakMap<object, () => ExecSession>();
/** On a replica that does not lead: each upgrade request's session, opened on the leader already. */
const onLeader = new WeakMap<object, WebSocket>();

export function execRoutes(api: Router, ctx: ServiceContext, limits: SessionLimits): void {
  const bounds = new SessionBounds(limits);
  /** Starts what `req` was allowed on its socket, within the bounds; serves it with `carry`. */
  const start = (
    socket: WebSocket,
    req: { principal: Principal },
    carry: (s: WebSocket, e: ExecSession) => void,
  ) => {
    const closed = ctx.metrics?.streamOpened('exec');
    if (closed) socket.once('close', closed);
    const upstream = onLeader.get(req);
    if (upstream) {
      onLeader.delete(req);
      return pipeSockets(socket, upstream);
    }
    const begin = allowed.get(req);
    if (!begin) return socket.close(1011, 'no session');
    const who = holder(req.principal);
    // Counted from the upgrade (a request that never upgraded holds nothing), checked before it too.
    const refused = bounds.refusal(who);
    if (refused) return socket.close(1013, closeReason(refused));
    let session: ExecSession;
    try {
      session = begin();
    } catch (e) {
      // The job ended between the check and the upgrade.
      return socket.close(1011, closeReason((e as Error).message));
    }
    bounds.take(who);
    socket.once('close', () => bounds.give(who));
    carry(socket, session);
  };
  /**
   * Refuses a user past the bounds; on a replica that does not lead, opens the session on the
   * leader (whose agent host holds the job) and says so: the route's own checks are the leader's.
   */
  const checkOrForward = async (req: FastifyRequest & { principal: Principal }): Promise<boolean> => {
    const refused = bounds.refusal(holder(req.principal));
    if (refused) throw new TooManyRequestsError(refused, 5);
    const leader = leaderFor(req, ctx.cluster);
    if (!leader) return false;
    const upstream = await openOnLeader(req, ctx.cluster!, leader);
    onLeader.set(req, upstream);
    // A request that never upgrades (a plain GET) leaves nothing open on the leader.
    setTimeout(() => {
      if (onLeader.get(req) !== upstream) return;
      onLeader.delete(req);
      upstream.close(1001, 'the client never upgraded');
    }, 10_000).unref();
    return true;
  };
  api.get(
    '/jobs/:id/exec',
    {
      websocket: true,
      schema: {
        tags: ['jobs'],
        summary:
          "Runs a command inside a running job, over a WebSocket (channels: 0 stdin, 1 stdout, 2 stderr, 3 status, 4 resize; 255 closes stdin): for the job's submitter and its project's owners; audited",
        params: JobParams,
        querystring: ExecQuery,
      },
      preHandler: async (req) => {
        if (await checkOrForward(req)) return;
        const { command, rank = 0, tty, cols = 80, rows = 24 } = req.query;
        const argv = Array.isArray(command) ? command : [command];
        const run = { command: argv, ...(tty ? { tty: { cols, rows } } : {}) };
        allowed.set(req, await openExec(running(ctx), req.principal, req.params.id, run, rank, req.ws));
      },
    },
    (socket: WebSocket, req) => start(socket, req, serve),
  );
  api.get(
    '/jobs/:id/port-forward',
    {
      websocket: true,
      schema: {
        tags: ['jobs'],
        summary:
          "One TCP connection to a port on the loopback of a running job's network, over a WebSocket (binary frames both ways): with the rights of exec; audited",
        params: JobParams,
        querystring: ForwardQuery,
      },
      preHandler: async (req) => {
        if (await checkOrForward(req)) return;
        const { port, rank = 0 } = req.query;
        allowed.set(
          req,
          await openExec(running(ctx), req.principal, req.params.id, { forward: port }, rank, req.ws),
        );
      },
    },
    (socket: WebSocket, req) => start(socket, req, relay),
  );
  api.get(
    '/jobs/:id/attach',
    {
      websocket: true,
      schema: {
        tags: ['jobs'],
        summary:
          "An interactive job's terminal (berth run -it, berth attach), over a WebSocket with exec's channels: its output since a while before (the last 64 KiB), then as it comes; a newer attach takes it over. A closed connection lets go of it, and the job runs on for interactive.detachGrace. With the rights of exec; audited",
        params: JobParams,
        querystring: AttachQuery,
      },
      preHandler: async (req) => {
        if (await checkOrForward(req)) return;
        const { cols = 80, rows = 24 } = req.query;
        allowed.set(
          req,
          await openExec(running(ctx), req.principal, req.params.id, { attach: { cols, rows } }, 0, req.ws),
        );
      },
    },
    (socket: WebSocket, req) => start(socket, req, serve),
  );
}

/** Whose sessions count together: a user's (only people may open one). */
const holder = (p: Principal): string => (p.kind === 'user' ? p.user.name : p.kind);

/** A close's reason: at most 123 bytes (110 cut, and a character cut in two said as one U+FFFD). */
const closeReason = (text: string): string => Buffer.from(text).subarray(0, 110).toString();

/**
 * Carries one forwarded connection: binary frames are its bytes, both ways. Its end closes the
 * socket (1000), or says why it failed (1011: "nothing listens on port 8888 in the job").
 */
function relay(socket: WebSocket, session: ExecSession): void {
  let ended = false;
  let why = '';
  const held = { paused: false };
  session.on((e) => {
    if (e.type === 'output') {
      if (e.stream === 'stderr') why += e.data.toString('utf8');
      else if (socket.readyState === socket.OPEN) sendFlowing(socket, session, e.data, held);
      return;
    }
    ended = true;
    if (socket.readyState !== socket.OPEN) return;
    if (e.exitCode === 0) socket.close(1000, 'closed');
    // A close's reason holds at most 123 bytes.
    else
      socket.close(
        1011,
        Buffer.from(why.trim() || e.message || 'the connection failed')
          .subarray(0, 120)
          .toString(),
      );
  });
  socket.on('message', (data: Buffer, isBinary: boolean) => {
    if (isBinary) return session.write(data);
    session.kill();
    socket.close(1008, 'text frames are not part of port-forward: send binary frames');
  });
  socket.on('close', () => {
    if (!ended) session.kill();
  });
}

/**
 * What a session may have sent that its client has not taken yet before its output is held back
 * (the command then waits on its full pipe), and what lets it go again.
 */
const FLOW_HIGH = 4 << 20;
const FLOW_LOW = 1 << 20;

/**
 * Sends `data` on `socket`, holding `session`'s output back while the client is behind: a slow
 * client makes the command wait, never the server's memory grow.
 */
function sendFlowing(socket: WebSocket, session: ExecSession, data: Buffer, held: { paused: boolean }): void {
  socket.send(data);
  if (held.paused || socket.bufferedAmount < FLOW_HIGH) return;
  held.paused = true;
  session.flow(true);
  const watch = setInterval(() => {
    if (socket.readyState === socket.OPEN && socket.bufferedAmount > FLOW_LOW) return;
    clearInterval(watch);
    held.paused = false;
    session.flow(false);
  }, 10);
}

/** Carries one session over its socket until the command ends or the client goes away. */
function serve(socket: WebSocket, session: ExecSession): void {
  let ended = false;
  const held = { paused: false };
  const frame = (channel: number, data: Buffer) => Buffer.concat([Buffer.of(channel), data]);
  session.on((e) => {
    if (socket.readyState !== socket.OPEN) return;
    if (e.type === 'output') {
      const channel = e.stream === 'stdout' ? EXEC_CHANNEL.stdout : EXEC_CHANNEL.stderr;
      sendFlowing(socket, session, frame(channel, e.data), held);
      return;
    }
    ended = true;
    const { type: _type, ...status } = e;
    socket.send(frame(EXEC_CHANNEL.status, Buffer.from(JSON.stringify(status))));
    socket.close(1000, 'ended');
  });
  const refuse = (why: string) => {
    session.kill();
    socket.close(1008, why);
  };
  socket.on('message', (data: Buffer, isBinary: boolean) => {
    if (!isBinary) return refuse('text frames are not part of the exec protocol: send binary frames');
    const channel = data[0];
    if (channel === EXEC_CHANNEL.stdin) session.write(data.subarray(1));
    else if (channel === EXEC_CHANNEL.close && data[1] === EXEC_CHANNEL.stdin) session.write(null);
    else if (channel === EXEC_CHANNEL.resize) {
      const size = terminalSize(data.subarray(1));
      if (size) session.resize(size);
      else refuse('a resize is {"cols": N, "rows": N}, each from 1 to 1000');
    } else refuse(`unknown channel ${channel ?? '(empty frame)'}`);
  });
  // Gone before its command ended (a dropped connection, ^C): the command ends too.
  socket.on('close', () => {
    if (!ended) session.kill();
  });
}

/** `{"cols": N, "rows": N}` with each from 1 to MAX_TERMINAL_SIDE, or undefined. */
function terminalSize(json: Buffer): TerminalSize | undefined {
  let v: unknown;
  try {
    v = JSON.parse(json.toString('utf8'));
  } catch {
    return undefined;
  }
  const side = (n: unknown) =>
    typeof n === 'number' && Number.isInteger(n) && n >= 1 && n <= MAX_TERMINAL_SIDE;
  if (typeof v !== 'object' || v === null) return undefined;
  const { cols, rows } = v as Record<string, unknown>;
  return side(cols) && side(rows) ? { cols: cols as number, rows: rows as number } : undefined;
}
