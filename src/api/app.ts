/**
 * The HTTP API: Fastify with TypeBox schemas. Builds the app; the caller decides where it listens.
 */
import swagger from '@fastify/swagger';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, {
  LogController,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  type FastifyServerFactory,
  type FastifyServerOptions,
} from 'fastify';
import type { IncomingHttpHeaders } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { BerthError, UnauthorizedError } from '../domain/errors.js';
import type { Principal } from '../domain/user.js';
import { authorizeCall } from '../service/tenancy/access.js';
import { authenticate } from '../service/tenancy/authenticate.js';
import type { ServiceContext } from '../service/context.js';
import { CredentialWatch } from '../service/tenancy/credential-watch.js';
import { bearerToken } from './bearer.js';
import { clientAddress } from './client-address.js';
import { installErrorHandlers } from './errors.js';
import { installForwarding } from './forward.js';
import { installJsonBody } from './json-body.js';
import { installNulGuard } from './nul-guard.js';
import { installRateLimit } from './rate-limit.js';
import { chooseProtocol, socketToken } from './socket-token.js';
import { toOpenApi30 } from './schemas.js';
import { validatorCompiler } from './validation.js';
import { metaRoutes } from './routes/meta.js';
import { projectRoutes } from './routes/projects.js';
import { queueRoutes } from './routes/cluster-queues.js';
import { userRoutes } from './routes/users.js';
import { auditRoutes } from './routes/audit.js';
import { usageRoutes } from './routes/usage.js';
import { forecastRoutes } from './routes/forecast.js';
import { agentRoutes } from './routes/agent.js';
import { agentChannelRoute } from './routes/agent-channel.js';
import { execRoutes } from './routes/exec.js';
import { EXEC_MAX_FRAME, type SessionLimits } from '../domain/exec-protocol.js';
import websocket from '@fastify/websocket';
import { artifactRoutes } from './routes/artifacts.js';
import { infrastructureRoutes } from './routes/infrastructure.js';
import { jobRoutes } from './routes/jobs.js';
import { arrayRoutes } from './routes/arrays.js';
import { priorityClassRoutes } from './routes/priority-classes.js';
import { metricsRoutes } from './routes/metrics.js';
import { streamRoutes } from './routes/stream.js';
import { webRoutes } from './routes/web.js';

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal;
  }
  interface FastifyContextConfig {
    /** Routes that need no token (health, the OpenAPI document). */
    public?: boolean;
  }
}

export const API_PREFIX = '/api/v1';
/** Large enough for any job spec with a script and environment; small enough to refuse abuse. */
export const BODY_LIMIT = 1024 * 1024;

export interface ApiOptions {
  logger?: FastifyServerOptions['logger'];
  version: string;
  /** The built dashboard (default: the package's dist/web). */
  webRoot?: string;
  /** Serve HTTPS with this certificate (PEM, with its chain) and private key (PEM). */
  https?: { cert: Buffer; key: Buffer };
  /** Requests per second per token (config `rateLimit.requestsPerSecond`); 0 or absent: none. */
  requestsPerSecond?: number;
  /** Requests per second per job's token (config `rateLimit.jobRequestsPerSecond`); 0 or absent: none. */
  jobRequestsPerSecond?: number;
  /** `berth exec` and `port-forward` sessions open at once (config `sessions`; default 32 and 1024). */
  sessions?: SessionLimits;
}

export type Api = FastifyInstance;

export async function buildApi(ctx: ServiceContext, opts: ApiOptions): Promise<FastifyInstance> {
  const app = Fastify({
    logger: opts.logger ?? false,
    bodyLimit: BODY_LIMIT,
    logController: new LogController({ disableRequestLogging: true }),
    ...httpsServer(opts.https),
    // Names may be up to 253 characters; the schema, not the router, should refuse longer ones.
    routerOptions: { maxParamLength: 512 },
    // Errors the router raises before any route runs (e.g. bad percent-encoding), in our shape.
    frameworkErrors: (error, _request, reply) => {
      void (reply as FastifyReply)
        .status(400)
        .send({ error: { code: 'bad_request', message: `malformed request: ${error.message}` } });
    },
  }).withTypeProvider<TypeBoxTypeProvider>();
  app.setValidatorCompiler(validatorCompiler);
  installJsonBody(app);
  installErrorHandlers(app);
  await app.register(swagger, {
    openapi: {
      info: { title: 'berth', version: opts.version, description: 'berth batch job scheduler API' },
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
      security: [{ bearer: [] }],
    },
    // The document declares OpenAPI 3.0: its schemas in 3.0's dialect (see toOpenApi30).
    transform: ({ schema, url }) => ({ schema: toOpenApi30(schema), url }),
  });

  // WebSocket upgrades (berth exec: routes/exec.ts); frames past 1 MiB close the connection. A
  // browser offers its token as a subprotocol beside berth's own, which is the one selected: the
  // token is never echoed back (socket-token.ts).
  await app.register(websocket, {
    options: { maxPayload: EXEC_MAX_FRAME, handleProtocols: (offered) => chooseProtocol(offered) },
    // A client that breaks the protocol (a frame too large, a bad opcode: ws's WS_ERR_*) is the
    // client's mistake, closed with its code by ws, not an error of the server's.
    errorHandler: (error, socket, request) => {
      const code = (error as NodeJS.ErrnoException).code ?? '';
      if (code.startsWith('WS_ERR_')) request.log.info({ code }, `WebSocket closed: ${error.message}`);
      else request.log.error(error);
      socket.terminate();
    },
  });
  app.decorateRequest('principal', null as never);
  app.addHook('onRequest', async (request) => {
    if (request.routeOptions.config.public || !request.routeOptions.url) return;
    const token = requestToken(request);
    // With its address: the audit log records where each change came from (through a follower,
    // the client's, as the follower signed it).
    request.principal = await authenticate(ctx, token, clientAddress(request, ctx.cluster?.secret));
    // Before any handler, so that no route is open to a limited token unless access.ts lists it.
    const url = request.routeOptions.url;
    authorizeCall(
      request.principal,
      request.method,
      url.startsWith(API_PREFIX) ? url.slice(API_PREFIX.length) : url,
    );
  });
  // Every answer, refusals included, by its route's template (metrics/http-metrics.ts).
  const http = ctx.metrics?.http;
  if (http)
    app.addHook('onResponse', (request, reply, done) => {
      http.answered(
        request.routeOptions.url,
        request.method,
        reply.statusCode,
        reply.elapsedTime / 1000,
        callerOf(request.principal),
      );
      done();
    });
  // After authentication (it counts per token) and before the routes (it hooks each).
  await installRateLimit(app, {
    requestsPerSecond: opts.requestsPerSecond ?? 0,
    jobRequestsPerSecond: opts.jobRequestsPerSecond ?? 0,
  });
  // After authentication: a follower checks the token itself before it hands a request on.
  installForwarding(app, ctx);
  // Before every route's schema: no NUL reaches a service or the store (nul-guard.ts).
  installNulGuard(app);
  // Bodies are read as sent: a compressed one would be parsed as text or as malformed JSON.
  // RFC 9110 (15.5.16, 12.5.3): 415, saying which codings are accepted.
  app.addHook('preParsing', async (request, reply) => {
    const codings = bodyCodings(request.headers);
    if (codings.length === 0) return;
    void reply.header('accept-encoding', 'identity');
    throw new BerthError(
      'unsupported_media_type',
      415,
      `unsupported Content-Encoding "${codings.join(', ')}": send the request body uncompressed`,
    );
  });

  // Streams and followed logs end when the token that opened them stops working.
  const credentials = new CredentialWatch(ctx, (err) => app.log.error({ err }, 'checking a token'));
  app.addHook('preClose', async () => credentials.close());
  await app.register(
    async (api) => {
      await metaRoutes(api, ctx, opts.version);
      await userRoutes(api, ctx);
      await auditRoutes(api, ctx);
      await usageRoutes(api, ctx);
      await forecastRoutes(api, ctx);
      await queueRoutes(api, ctx);
      await projectRoutes(api, ctx);
      await priorityClassRoutes(api, ctx);
      // Job routes reach the controller through ctx.runtime, set before the server listens.
      await jobRoutes(api, ctx, credentials);
      await arrayRoutes(api, ctx);
      await agentRoutes(api, ctx);
      agentChannelRoute(api, ctx);
      execRoutes(api, ctx, opts.sessions ?? { maxPerUser: 32, maxPerServer: 1024 });
      await artifactRoutes(api, ctx);
      await infrastructureRoutes(api, ctx);
      await metricsRoutes(api, ctx);
      await streamRoutes(api, ctx, credentials);
    },
    { prefix: API_PREFIX },
  );
  // The dashboard, outside the API prefix: every other GET path.
  await webRoutes(app, opts.webRoot);
  return app;
}

/**
 * The request's bearer token: its Authorization header's, or — on a WebSocket upgrade without
 * that header, as a browser's `WebSocket` cannot send one — the token it offers as a subprotocol
 * (socket-token.ts). That one is then set as the request's Authorization header, so that what
 * reads the header later (the rate limit per token, the hand-over to the leader in
 * socket-forward.ts) reads the same token. Neither is ever logged.
 */
function requestToken(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  if (header !== undefined || !request.ws) return bearerToken(header);
  const offered = socketToken(request.headers['sec-websocket-protocol']);
  if (offered.kind === 'malformed') throw new UnauthorizedError(offered.why);
  if (offered.kind === 'none') return undefined;
  request.headers.authorization = `Bearer ${offered.token}`;
  return offered.token;
}

/**
 * HTTPS through a server of our own making: Fastify's `https` option would change the instance's
 * type (its raw server) for every route and plugin, where only the listening socket differs.
 */
function httpsServer(https: ApiOptions['https']): { serverFactory?: FastifyServerFactory } {
  if (!https) return {};
  return { serverFactory: (handler) => createHttpsServer({ cert: https.cert, key: https.key }, handler) };
}

/** The content codings other than identity that a request's body says it carries. */
function bodyCodings(headers: IncomingHttpHeaders): string[] {
  const hasBody = headers['transfer-encoding'] !== undefined || (headers['content-length'] ?? '0') !== '0';
  if (!hasBody) return [];
  return (headers['content-encoding'] ?? '')
    .split(',')
    .map((c) => c.trim().toLowerCase())
    .filter((c) => c !== '' && c !== 'identity');
}

/** Who asked, as `berth diag` counts callers: a user, a project token's project, jobs as one. */
function callerOf(p: Principal | null): string {
  if (!p) return 'no API token';
  if (p.kind === 'user') return `user ${p.user.name}`;
  return p.kind === 'project' ? `project ${p.project}` : 'jobs';
}
