/** The agent protocol (see agent/protocol.ts): reachable only with a job token. */
import { ForbiddenError, UnauthorizedError } from '../../domain/errors.js';
import type { Principal } from '../../domain/user.js';
import { running, type ServiceContext } from '../../service/context.js';
import {
  nextJob,
  pilotJob,
  pilotOfJob,
  registerAgent,
  WORKER_CREDENTIAL_HEADER,
} from '../../service/cluster/agent-registration.js';
import { getJob } from '../../service/jobs/jobs.js';
import {
  AgentHeartbeatQuery,
  FinishBody,
  WaitingBody,
  FinishQuery,
  HeartbeatQuery,
  RegisterBody,
  StartQuery,
} from '../job-schemas.js';
import type { Router } from './types.js';

const OCTETS = 'application/octet-stream';
/** The largest upload of output: the agent sends at most 256 KiB at a time (log-uploader.ts). */
const LOG_BODY_LIMIT = 4 * 1024 * 1024;

/** The job a job token reaches; anyone else is refused (403). */
export function jobId(p: Principal): number {
  if (p.kind !== 'job')
    throw new ForbiddenError('this endpoint needs a job token (BERTH_TOKEN inside a job)');
  return p.jobId;
}

/** A header's one value (Node gives an array for a repeated one). */
const header = (v: string | string[] | undefined): string | undefined => (Array.isArray(v) ? v[0] : v);

/** The credential of an `Authorization: Bearer …` header (not an API token: see the handlers). */
export function bearer(header: string | undefined): string {
  const credential = /^bearer\s+(\S+)\s*$/i.exec(header ?? '')?.[1];
  if (!credential) throw new UnauthorizedError('missing credential: pass "Authorization: Bearer CREDENTIAL"');
  return credential;
}

export async function agentRoutes(api: Router, ctx: ServiceContext): Promise<void> {
  const tags = ['agent'];
  const controller = () => running(ctx).runtime.controller;
  api.get(
    '/job/self',
    {
      config: { leader: 'only' },
      schema: { tags, summary: "The running job with its resources' metadata (job token only)" },
    },
    async (req) => {
      const id = jobId(req.principal);
      const job = await getJob(ctx, req.principal, id);
      // The one place metadata (passwords) is served: to the job that holds the instance.
      const metadata = controller().heldMetadata(id);
      return {
        ...job,
        resources: job.resources.map((r) => ({
          ...r,
          metadata: r.state === 'ready' ? (metadata[r.type] ?? null) : null,
        })),
      };
    },
  );
  api.post(
    '/job/self/start',
    {
      config: { leader: 'only', lifeline: true },
      schema: {
        tags,
        summary:
          "Agent: the job starts; returns what to run. For a gang's member: 202 without a body while its other ranks have not arrived (a long poll up to `wait` seconds): call again",
        querystring: StartQuery,
      },
    },
    async (req, reply) => {
      const { rank = 0, host = '', wait = 0 } = req.query;
      const spec = await controller().agentStart(jobId(req.principal), { rank, host }, wait * 1000);
      return spec ?? reply.status(202).send();
    },
  );
  // Output is bytes, kept as written (application/octet-stream): only in this context (a plugin
  // of its own), so no other route takes octets as a whole body. text/plain, which earlier agents
  // sent (an agent on a Slurm node may be older than its server), is still taken, as its UTF-8.
  await api.register(async (logs: Router) => {
    logs.addContentTypeParser(OCTETS, { parseAs: 'buffer', bodyLimit: LOG_BODY_LIMIT }, (_req, body, done) =>
      done(null, body),
    );
    logs.post(
      '/job/self/logs',
      {
        bodyLimit: LOG_BODY_LIMIT,
        config: { leader: 'only' },
        schema: {
          tags,
          summary: 'Agent: append output, byte for byte (application/octet-stream; text/plain as UTF-8)',
        },
      },
      async (req, reply) => {
        const body = req.body;
        const data = Buffer.isBuffer(body) ? body : Buffer.from(typeof body === 'string' ? body : '', 'utf8');
        await controller().agentLogs(jobId(req.principal), data);
        return reply.status(204).send();
      },
    );
  });
  api.post(
    '/job/self/heartbeat',
    {
      config: { leader: 'only', lifeline: true },
      schema: {
        tags,
        summary: 'Agent: heartbeat, long-polled; answers early when the job must stop',
        querystring: AgentHeartbeatQuery,
      },
    },
    async (req) =>
      controller().agentHeartbeat(jobId(req.principal), (req.query.wait ?? 0) * 1000, req.query.rank ?? 0),
  );
  api.post(
    '/job/self/waiting',
    {
      config: { leader: 'only' },
      schema: {
        tags,
        summary:
          "Agent, before the job's start: what keeps it from starting (its image's pull), shown as the job's reason; null once nothing does",
        body: WaitingBody,
      },
    },
    async (req, reply) => {
      controller().agentWaiting(jobId(req.principal), req.body.reason);
      return reply.status(204).send();
    },
  );
  api.post(
    '/agent/register',
    {
      // Its bearer token is the worker's one-time credential, not an API token: checked here.
      config: { public: true },
      schema: {
        tags,
        summary:
          "An agent on another machine registers its worker; returns the job's token. Its bearer is the worker's one-time credential, not an API token",
        // No API token: the one-time credential is checked by the handler.
        security: [],
        body: RegisterBody,
      },
    },
    async (req) => {
      return registerAgent(ctx, req.body.workerId, bearer(req.headers.authorization));
    },
  );
  api.post(
    '/agent/next',
    {
      // Its bearer is a pilot's worker credential (from its registration), checked by the service.
      config: { public: true, leader: 'only' },
      schema: {
        tags,
        summary:
          "A pilot worker's agent asks for its next job (long poll up to `wait` seconds): a job with its token, `wait`, or `stop`. Its bearer is the worker credential its registration gave",
        security: [],
        body: RegisterBody,
        querystring: HeartbeatQuery,
      },
    },
    async (req) =>
      nextJob(
        running(ctx),
        req.body.workerId,
        bearer(req.headers.authorization),
        (req.query.wait ?? 0) * 1000,
      ),
  );
  api.post(
    '/job/self/finish',
    {
      config: { leader: 'only', lifeline: true },
      schema: {
        tags,
        summary:
          "Agent: how the job (a gang member's rank) ended. With `next`, a pilot's agent gets its worker's next job in the answer, as from /agent/next: the job's token is the worker's for that one call",
        body: FinishBody,
        querystring: FinishQuery,
      },
    },
    async (req, reply) => {
      const { rank = 0, next } = req.query;
      const job = jobId(req.principal);
      // Checked before the finish is taken: a refused call changes nothing.
      const pilot =
        next === undefined
          ? undefined
          : await pilotOfJob(ctx, job, header(req.headers[WORKER_CREDENTIAL_HEADER]));
      const kept = await controller().agentFinish(job, req.body, rank);
      if (kept === null || pilot === undefined || kept !== pilot) return reply.status(204).send();
      return pilotJob(running(ctx), kept, next! * 1000);
    },
  );
}
