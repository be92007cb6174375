/** The token of an `Authorization: Bearer TOKEN` header; the scheme is case-insensitive (RFC 7235). */
export function bearerToken(header: string | undefined): string | undefined {
  return /^bearer\s+(\S+)\s*$/i.exec(header ?? '')?.[1];
}
