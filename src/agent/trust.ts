/**
 * Which servers a client trusts over HTTPS: Node's built-in CAs, plus the certificates of a PEM
 * file given with `--ca` (BERTH_CA, a context's `ca`, a factory's `ca`) — a private CA, or the
 * server's own certificate. Every certificate in the file is a trust anchor (OpenSSL's partial
 * chain), so pinning the server's certificate works even when a CA the client does not have signed
 * it. The server's name is always checked: nothing here turns verification off.
 */
import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Agent as HttpsAgent } from 'node:https';
import { createSecureContext, rootCertificates, type SecureContext } from 'node:tls';

/** The environment variable that names the CA file for `berth agent` and the CLI. */
export const CA_ENV = 'BERTH_CA';

const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----[^-]+-----END CERTIFICATE-----/g;

/** A CA file that cannot be used: unreadable, or holding no PEM certificate. */
export class TrustError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TrustError';
  }
}

/** The certificates of a PEM file, each checked; a TrustError naming the file otherwise. */
export function readCaFile(file: string): string[] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    const why = code === 'ENOENT' ? 'no such file' : code === 'EACCES' ? 'permission denied' : String(code);
    throw new TrustError(`cannot read ${file}: ${why}`);
  }
  const pems = text.match(PEM_CERTIFICATE) ?? [];
  if (pems.length === 0) throw new TrustError(`${file} holds no PEM certificate`);
  for (const pem of pems) {
    try {
      new X509Certificate(pem);
    } catch {
      throw new TrustError(`${file} holds a PEM certificate that cannot be parsed`);
    }
  }
  return pems;
}

/** A TLS context trusting the built-in CAs and `extra`, made once: loading 140 roots costs ms. */
export function trustingContext(extra: string[]): SecureContext {
  return createSecureContext({ ca: [...rootCertificates, ...extra], allowPartialTrustChain: true });
}

/** A keep-alive HTTPS agent whose connections trust the built-in CAs and `extra`. */
export function trustingAgent(extra: string[]): HttpsAgent {
  return new HttpsAgent({ keepAlive: true, secureContext: trustingContext(extra) });
}

/** Node's codes for a server certificate that failed verification: no retry will change them. */
const CERTIFICATE_ERRORS = new Set([
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'CERT_UNTRUSTED',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

/** Whether `err` is the refusal of the server's certificate. */
export function isCertificateError(err: unknown): boolean {
  const code = (err as { code?: unknown } | null | undefined)?.code;
  return typeof code === 'string' && CERTIFICATE_ERRORS.has(code);
}
