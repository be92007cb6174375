/**
 * The shape of berth.yaml: TypeBox schemas (the runtime check) and the types they give. A leaf
 * module: the controller, factories, wells and services read their settings' types from here
 * without reaching into the server that loads the file (load.ts).
 */
import { Type, type Static } from '@sinclair/typebox';

const Capacity = Type.Integer({ minimum: 1, description: 'instances alive at once' });
const Privilege = Type.String({ minLength: 1 });
const strict = <T extends Parameters<typeof Type.Object>[0]>(props: T) =>
  Type.Object(props, { additionalProperties: false });

export const FACTORY_KINDS = ['local', 'simulated'] as const;
/** Simulated workers cost no process: room for a large scenario by default. */
export const SIMULATED_CAPACITY = 10_000;
export const RESOURCE_KINDS = ['semaphore', 'exec', 'postgres', 'token'] as const;

const FactorySchema = strict({
  kind: Type.Union(FACTORY_KINDS.map((k) => Type.Literal(k))),
  capacity: Type.Optional(Capacity),
});
const TargetSchema = strict({ factory: Type.String(), privilege: Type.Optional(Privilege) });
const ResourceSchema = strict({
  kind: Type.Union(RESOURCE_KINDS.map((k) => Type.Literal(k))),
  capacity: Capacity,
  privilege: Type.Optional(Privilege),
  url: Type.Optional(Type.String()),
  /** postgres: prefix of the databases and roles it makes (default: one per installation). */
  prefix: Type.Optional(Type.String({ pattern: '^[a-z_][a-z0-9_]{0,40}$' })),
  create: Type.Optional(Type.String()),
  destroy: Type.Optional(Type.String()),
});

export const ConfigSchema = strict({
  listen: Type.Optional(Type.String()),
  dataDir: Type.Optional(Type.String()),
  database: Type.Optional(Type.String()),
  defaultTarget: Type.Optional(Type.String()),
  logLevel: Type.Optional(
    Type.Union(['fatal', 'error', 'warn', 'info', 'debug', 'trace'].map((l) => Type.Literal(l))),
  ),
  heartbeatSeconds: Type.Optional(Type.Integer({ minimum: 1, maximum: 3600 })),
  /** Replicas on PostgreSQL: how long the leader's lease lasts, and how often it is renewed. */
  leaseSeconds: Type.Optional(Type.Integer({ minimum: 3, maximum: 3600 })),
  renewSeconds: Type.Optional(Type.Integer({ minimum: 1, maximum: 1200 })),
  graceSeconds: Type.Optional(Type.Integer({ minimum: 0, maximum: 3600 })),
  factories: Type.Optional(Type.Record(Type.String(), FactorySchema)),
  targets: Type.Optional(Type.Record(Type.String(), TargetSchema)),
  resources: Type.Optional(Type.Record(Type.String(), ResourceSchema)),
});

export type RawConfig = Static<typeof ConfigSchema>;
export type FactoryConfig = Required<Static<typeof FactorySchema>>;
export type TargetConfig = Static<typeof TargetSchema>;
export type ResourceConfig = Static<typeof ResourceSchema>;

/** The configuration with every default filled in. */
export interface Config {
  listen: string;
  dataDir: string;
  database: string;
  defaultTarget: string;
  logLevel: string;
  /** A worker silent for this long is declared lost. */
  heartbeatSeconds: number;
  /** The leader's lease (replicas on PostgreSQL): it lasts this long unless renewed… */
  leaseSeconds: number;
  /** …and is renewed this often (at most a third of the lease). */
  renewSeconds: number;
  /** Between SIGTERM and SIGKILL when a job is stopped. */
  graceSeconds: number;
  factories: Record<string, FactoryConfig>;
  targets: Record<string, TargetConfig>;
  resources: Record<string, ResourceConfig>;
}
