/** Request schemas of users and their tokens. */
import { Type } from '@sinclair/typebox';

const strict = <T extends Parameters<typeof Type.Object>[0]>(props: T) =>
  Type.Object(props, { additionalProperties: false });

const Name = (description: string) => Type.String({ minLength: 1, maxLength: 253, description });

const ExpiresIn = (what: string) =>
  Type.String({
    minLength: 1,
    maxLength: 32,
    description: `how long ${what} lives: 30d, 12h, 90m, or seconds`,
  });
const ExpiresAt = (what: string) =>
  Type.String({ minLength: 1, maxLength: 64, description: `when ${what} expires (ISO 8601)` });

export const CreateUserBody = strict({
  name: Name('user name'),
  admin: Type.Optional(Type.Boolean({ description: 'global administrator' })),
  tokenExpiresIn: Type.Optional(ExpiresIn('its first token')),
  tokenExpiresAt: Type.Optional(ExpiresAt('its first token')),
});

export const CreateTokenBody = strict({
  label: Type.Optional(Type.String({ maxLength: 200 })),
  expiresIn: Type.Optional(ExpiresIn('the token')),
  expiresAt: Type.Optional(ExpiresAt('the token')),
});

const TokenId = Type.String({
  minLength: 1,
  maxLength: 64,
  description: 'the token id berth token list shows',
});
export const TokenParams = strict({ id: TokenId });
export const UserTokenParams = strict({ name: Name('user name'), id: TokenId });
