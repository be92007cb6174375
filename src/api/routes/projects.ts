import { Type } from '@sinclair/typebox';
import type { ServiceContext } from '../../service/context.js';
import {
  createProject,
  getProject,
  grantPrivilege,
  listVisibleProjects,
  patchProject,
  removeMember,
  removeProject,
  revokePrivilege,
  setMember,
} from '../../service/tenancy/projects.js';
import {
  CreateProjectBody,
  MemberBody,
  MemberParams,
  NameParams,
  PatchProjectBody,
  PrivilegeParams,
  ProjectDetailViewSchema,
  RegistryLoginBody,
  RegistryParams,
  ProjectViewSchema,
} from '../schemas.js';
import {
  listProjectRegistries,
  removeRegistryCredential,
  setRegistryCredential,
} from '../../service/tenancy/registry-credentials.js';
import type { Router } from './types.js';

export async function projectRoutes(api: Router, ctx: ServiceContext): Promise<void> {
  const tags = ['projects'];
  api.post(
    '/projects',
    {
      schema: { tags, summary: 'Create a project bound to a cluster queue (admin)', body: CreateProjectBody },
    },
    async (req, reply) => reply.status(201).send(await createProject(ctx, req.principal, req.body)),
  );
  api.get(
    '/projects',
    {
      schema: {
        tags,
        summary: 'Projects the caller can see, with their job counts',
        response: { 200: Type.Array(ProjectViewSchema) },
      },
    },
    async (req) => listVisibleProjects(ctx, req.principal),
  );
  api.get(
    '/projects/:name',
    {
      schema: {
        tags,
        summary: 'A project with members, privileges and job counts',
        params: NameParams,
        response: { 200: ProjectDetailViewSchema },
      },
    },
    async (req) => getProject(ctx, req.principal, req.params.name),
  );
  api.patch(
    '/projects/:name',
    {
      schema: {
        tags,
        summary: 'Change a project (owner or admin)',
        params: NameParams,
        body: PatchProjectBody,
      },
    },
    async (req) => patchProject(ctx, req.principal, req.params.name, req.body),
  );
  api.delete(
    '/projects/:name',
    {
      schema: {
        tags,
        summary: 'Delete a project (owner or admin)',
        description:
          'Refused with 409 while the project has unfinished jobs, unless cancelJobs=true: then they are ' +
          'cancelled. Its jobs stay readable by admins by id, filed under "<name>~deleted-<time>".',
        params: NameParams,
        querystring: Type.Object({
          cancelJobs: Type.Optional(
            Type.Boolean({ description: 'Cancel the unfinished jobs and delete the project' }),
          ),
        }),
      },
    },
    async (req, reply) => {
      await removeProject(ctx, req.principal, req.params.name, { cancelJobs: req.query.cancelJobs });
      return reply.status(204).send();
    },
  );
  api.put(
    '/projects/:name/members/:user',
    {
      schema: {
        tags,
        summary: 'Add a member or change its role (owner or admin)',
        params: MemberParams,
        body: MemberBody,
      },
    },
    async (req) => setMember(ctx, req.principal, req.params.name, req.params.user, req.body.role),
  );
  api.delete(
    '/projects/:name/members/:user',
    { schema: { tags, summary: 'Remove a member (owner or admin)', params: MemberParams } },
    async (req) => removeMember(ctx, req.principal, req.params.name, req.params.user),
  );
  api.get(
    '/projects/:name/registries',
    {
      schema: {
        tags,
        summary:
          "The registries the project's jobs log in to, and as whom; never a password (owner or admin)",
        params: NameParams,
      },
    },
    async (req) => listProjectRegistries(ctx, req.principal, req.params.name),
  );
  api.put(
    '/projects/:name/registries/:registry',
    {
      schema: {
        tags,
        summary:
          "Set the credentials the project's jobs pull their images from a registry with, sealed (owner or admin)",
        params: RegistryParams,
        body: RegistryLoginBody,
      },
    },
    async (req) => setRegistryCredential(ctx, req.principal, req.params.name, req.params.registry, req.body),
  );
  api.delete(
    '/projects/:name/registries/:registry',
    {
      schema: {
        tags,
        summary: 'Remove the project’s credentials for a registry (owner or admin)',
        params: RegistryParams,
      },
    },
    async (req, reply) => {
      await removeRegistryCredential(ctx, req.principal, req.params.name, req.params.registry);
      return reply.code(204).send();
    },
  );
  api.put(
    '/projects/:name/privileges/:privilege',
    { schema: { tags, summary: 'Grant a privilege (admin)', params: PrivilegeParams } },
    async (req) => grantPrivilege(ctx, req.principal, req.params.name, req.params.privilege),
  );
  api.delete(
    '/projects/:name/privileges/:privilege',
    { schema: { tags, summary: 'Revoke a privilege (admin)', params: PrivilegeParams } },
    async (req) => revokePrivilege(ctx, req.principal, req.params.name, req.params.privilege),
  );
}
