/** Request schemas of the audit log. */
import { Type } from '@sinclair/typebox';

const Name = (description: string) => Type.String({ minLength: 1, maxLength: 253, description });

export const AuditQuery = Type.Object(
  {
    since: Type.Optional(
      Type.String({ maxLength: 64, description: 'entries at or after this time (ISO 8601)' }),
    ),
    until: Type.Optional(Type.String({ maxLength: 64, description: 'entries before this time (ISO 8601)' })),
    user: Type.Optional(Name('only what this user did (or job N, job N (project token), system)')),
    project: Type.Optional(Name('only changes in this project')),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 100 })),
    cursor: Type.Optional(
      Type.String({ maxLength: 200, description: 'the X-Next-Cursor header of the previous page' }),
    ),
  },
  { additionalProperties: false },
);
