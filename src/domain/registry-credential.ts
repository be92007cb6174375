/**
 * A project's credentials for a registry its jobs' images come from (docs/IMAGES.md, "Private
 * registries"). Pure: no I/O. The password is never in a view, a log, an audit row or a job.
 */

/** `GET /projects/{p}/registries`: one registry the project logged in to. */
export interface RegistryCredentialView {
  /** `host[:port]`, as image references name it. */
  registry: string;
  username: string;
  updatedBy: string;
  updatedAt: string;
}

/** A credential in the clear, for the registry's questions and pulls of one job: never kept. */
export interface RegistryAuth {
  registry: string;
  username: string;
  password: string;
}

/** What a sealed password belongs to (store/secret-box.ts): it opens for this project and registry only. */
export const credentialContext = (project: string, registry: string): string =>
  `registry-credential\n${project}\n${registry}`;
