import type { ServiceContext } from '../../service/context.js';
import { createUser, createUserToken, getUser, getUsers, removeUser } from '../../service/users.js';
import { CreateTokenBody, CreateUserBody, NameParams } from '../schemas.js';
import type { Router } from './types.js';

export async function userRoutes(api: Router, ctx: ServiceContext): Promise<void> {
  const tags = ['users'];
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
        summary: 'A new token (admin, or yourself)',
        params: NameParams,
        body: CreateTokenBody,
      },
      // The body is optional: without one the token gets the default label.
      preValidation: async (req) => {
        if (req.body === undefined && req.headers['content-type'] === undefined) req.body = {};
      },
    },
    async (req, reply) =>
      reply.status(201).send(await createUserToken(ctx, req.principal, req.params.name, req.body.label)),
  );
}
