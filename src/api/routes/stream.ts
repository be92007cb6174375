/**
 * `GET /stream`: the dashboard's one push stream (server-sent events). `hello` first, then
 * `figures` and `job` notices from the hub, and with `?job=ID` that job's `log` and `log-end`.
 */
import type { Readable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import { Type } from '@sinclair/typebox';
import { requireUser } from '../../service/tenancy/access.js';
import { running, type ServiceContext } from '../../service/context.js';
import type { CredentialWatch } from '../../service/tenancy/credential-watch.js';
import { bearerToken } from '../bearer.js';
import { jobLogs } from '../../service/jobs/job-attempts.js';
import { SseConnection } from '../sse.js';
import { StreamHub } from '../stream-hub.js';
import type { Router } from './types.js';

const StreamQuery = Type.Object(
  { job: Type.Optional(Type.Integer({ minimum: 1, description: "also stream this job's log" })) },
  { additionalProperties: false },
);

export async function streamRoutes(
  api: Router,
  ctx: ServiceContext,
  credentials: CredentialWatch,
): Promise<void> {
  const hub = new StreamHub(ctx, (err, what) => api.log.error({ err }, what));
  // Open streams never end on their own: the server's close() would wait for them forever.
  api.addHook('preClose', async () => hub.closeAll());

  api.get(
    '/stream',
    {
      schema: {
        tags: ['meta'],
        summary:
          'Server-sent events: hello, figures (on change), job (a job you may see changed), log and log-end (with job=ID)',
        querystring: StreamQuery,
      },
    },
    async (req, reply) => {
      const user = requireUser(req.principal);
      const jobId = req.query.job;
      // Checked before the stream opens, so a job the caller may not see is a plain 404.
      const log = jobId === undefined ? undefined : await jobLogs(running(ctx), req.principal, jobId, true);
      reply.hijack();
      const conn = new SseConnection(reply.raw);
      const closed = ctx.metrics?.streamOpened('events');
      if (closed) conn.onClose(closed);
      conn.send('hello', JSON.stringify({ user: { name: user.name, admin: user.admin } }));
      // Ends with its token: revoked, expired, its user deleted (the log follow ends with it).
      conn.onClose(
        await credentials.watch(bearerToken(req.headers.authorization) ?? '', req.principal, () =>
          conn.end(),
        ),
      );
      try {
        await hub.add(conn, req.principal);
      } catch (e) {
        api.log.error({ err: e }, 'live stream: could not start');
        conn.end();
      }
      if (log && jobId !== undefined) {
        conn.onClose(() => log.destroy());
        void followLog(conn, jobId, log, () => !ctx.runtime?.controller.isActive(jobId)).catch(
          (e: unknown) => {
            if (!conn.closed) api.log.error({ err: e }, `live stream: log of job ${jobId}`);
          },
        );
      }
    },
  );
}

/**
 * The log so far, then each new chunk as it is written, at the pace the client reads (the next
 * chunk is read only when the socket has room); `log-end` once the job has ended and all of its
 * output has gone out.
 */
async function followLog(conn: SseConnection, jobId: number, log: Readable, ended: () => boolean) {
  const decoder = new StringDecoder('utf8'); // a chunk may end inside a multi-byte character
  const send = (text: string) => {
    if (text) conn.send('log', JSON.stringify({ jobId, text }));
  };
  for await (const chunk of log) {
    if (conn.closed) return;
    send(decoder.write(chunk as Buffer));
    if (!conn.writable) await conn.drained();
  }
  send(decoder.end());
  // The follower also stops when the server shuts down; the log is complete only if the job ended.
  if (ended()) conn.send('log-end', JSON.stringify({ jobId }));
}
