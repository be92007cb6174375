/** Request schemas of the artifact endpoints. */
import { Type } from '@sinclair/typebox';
import { MAX_ARTIFACT_NAME_LENGTH } from '../domain/artifact.js';

const strict = <T extends Parameters<typeof Type.Object>[0]>(props: T) =>
  Type.Object(props, { additionalProperties: false });

const Name = Type.String({
  minLength: 1,
  maxLength: MAX_ARTIFACT_NAME_LENGTH,
  description: "the file's path relative to the job's working directory, e.g. results/a.csv",
});

export const UploadQuery = strict({ name: Name });

/** `/jobs/{id}/artifacts/{*}`: the name is the rest of the path, slashes and all. */
export const ArtifactParams = strict({
  id: Type.Integer({ minimum: 1, description: 'job id' }),
  '*': Name,
});

/** `GET /jobs/{id}/artifacts`: a page, as the other paged lists take them (limit, cursor). */
export const ArtifactListQuery = strict({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 100 })),
  cursor: Type.Optional(
    // Long enough for the last name of a page (MAX_ARTIFACT_NAME_LENGTH, JSON-escaped, base64url).
    Type.String({ maxLength: 9000, description: 'the X-Next-Cursor header of the previous page' }),
  ),
});

export const ArtifactQuery = strict({
  attempt: Type.Optional(
    Type.Integer({
      minimum: 1,
      description: "which run's file (default: the latest run that kept one of that name)",
    }),
  ),
});
