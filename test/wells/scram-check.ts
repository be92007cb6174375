/**
 * The local server trusts every connection, so logging in cannot prove a password. Instead this
 * plays the server's side of a SCRAM-SHA-256 exchange (RFC 5802 §3, what PostgreSQL does) against
 * the verifier stored in pg_authid, with the `pg` driver's own client code on the other side.
 */
import { createHash, createHmac, randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';

interface SaslSession {
  clientNonce: string;
  response: string;
}
interface SaslModule {
  startSession(mechanisms: string[]): SaslSession;
  continueSession(session: SaslSession, password: string, serverData: string): Promise<void>;
  finalizeSession(session: SaslSession, serverData: string): void;
}
const sasl = createRequire(import.meta.url)('pg/lib/crypto/sasl.js') as SaslModule;

const hmac = (key: Buffer, text: string) => createHmac('sha256', key).update(text).digest();

/** True when `password` authenticates against `verifier` (SCRAM-SHA-256$ITER:SALT$STORED:SERVER). */
export async function scramAuthenticates(verifier: string, password: string): Promise<boolean> {
  const m = /^SCRAM-SHA-256\$(\d+):([^$]+)\$([^:]+):(.+)$/.exec(verifier);
  if (!m) throw new Error(`not a SCRAM-SHA-256 verifier: ${verifier.slice(0, 20)}…`);
  const [, iterations, salt, storedKeyB64, serverKeyB64] = m as unknown as [
    string,
    string,
    string,
    string,
    string,
  ];
  const session = sasl.startSession(['SCRAM-SHA-256']);
  const clientFirstBare = session.response.replace(/^n,,/, '');
  const serverFirst = `r=${session.clientNonce}${randomBytes(18).toString('base64')},s=${salt},i=${iterations}`;
  await sasl.continueSession(session, password, serverFirst);
  const [withoutProof = '', proof = ''] = session.response.split(',p=');
  const authMessage = `${clientFirstBare},${serverFirst},${withoutProof}`;
  const storedKey = Buffer.from(storedKeyB64, 'base64');
  const signature = hmac(storedKey, authMessage);
  const clientKey = Buffer.from(Buffer.from(proof, 'base64').map((b, i) => b ^ (signature[i] ?? 0)));
  if (!createHash('sha256').update(clientKey).digest().equals(storedKey)) return false;
  // The client checks the server's proof too: throws if ServerKey does not match the password.
  const serverSignature = hmac(Buffer.from(serverKeyB64, 'base64'), authMessage).toString('base64');
  sasl.finalizeSession(session, `v=${serverSignature}`);
  return true;
}
