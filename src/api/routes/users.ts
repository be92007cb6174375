import type { ServiceContext } from '../../service/context.js';
import {
  createUser,
  createUserToken,
  getUser,
  getUsers,
  listTokens,
  removeUser,
  revokeToken,
} from '../../service/tenancy/users.js';
import { NameParams } from '../schemas.js';
import { CreateTokenBody, CreateUserBody, TokenParams, UserTokenParams } from '../token-schemas.js';
import type { Router } from './types.js';

export async function userRoutes(api: Router, ctx: ServiceContext): Promise<void> {
  const tags = ['users'];
  // A token revoked or a user deleted through another replica leaves this one's cache too.
  if (ctx.changes) ctx.tokenCache?.follow(ctx.changes);
  api.post(
    '/users',
    {
      schema: {
        tags,
        summary: 'Create a user (admin); returns its first token, shown once',
        body: CreateUserBody,
      },
    },
    async (req, reply) => reply.status(201).send(await createUser(ctx, req.principal, req.body)),
  );
  api.get('/users', { schema: { tags, summary: 'List users (admin)' } }, async (req) =>
    getUsers(ctx, req.principal),
  );
  api.get(
    '/users/:name',
    { schema: { tags, summary: 'A user (admin, or yourself)', params: NameParams } },
    async (req) => getUser(ctx, req.principal, req.params.name),
  );
  api.delete(
    '/users/:name',
    { schema: { tags, summary: 'Delete a user (admin)', params: NameParams } },
    async (req, reply) => {
      await removeUser(ctx, req.principal, req.params.name);
      return reply.status(204).send();
    },
  );
  api.post(
    '/users/:name/tokens',
    {
      schema: {
        tags,
        summary: 'A new token (admin, or yourself), optionally expiring; shown once',
        params: NameParams,
        body: CreateTokenBody,
      },
      // The body is optional: without one the token gets the default label.
      preValidation: async (req) => {
        if (req.body === undefined && req.headers['content-type'] === undefined) req.body = {};
      },
    },
    async (req, reply) => {
      const { label, ...expiry } = req.body;
      return reply
        .status(201)
        .send(await createUserToken(ctx, req.principal, req.params.name, label, expiry));
    },
  );
  api.get(
    '/users/:name/tokens',
    {
      schema: {
        tags,
        summary:
          "A user's tokens (admin, or yourself): id, label, created, last used, expiry — never the token",
        params: NameParams,
      },
    },
    async (req) => listTokens(ctx, req.principal, req.params.name),
  );
  api.delete(
    '/users/:name/tokens/:id',
    {
      schema: {
        tags,
        summary: "Revoke one of a user's tokens (admin, or yourself)",
        params: UserTokenParams,
      },
    },
    async (req) => revokeToken(ctx, req.principal, req.params.id, req.params.name),
  );
  api.delete(
    '/tokens/:id',
    {
      schema: {
        tags,
        summary: 'Revoke a token by its id: your own, or (admins) anyone’s',
        params: TokenParams,
      },
    },
    async (req) => revokeToken(ctx, req.principal, req.params.id),
  );
}
