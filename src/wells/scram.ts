/**
 * PostgreSQL SCRAM-SHA-256 password verifiers, computed here so that a generated password never
 * travels to the server in clear text and cannot end up in its statement logs (the PostgreSQL
 * manual recommends this for CREATE ROLE … PASSWORD). Format: SCRAM-SHA-256$ITER:SALT$STORED:SERVER.
 */
import { createHash, createHmac, pbkdf2, randomBytes } from 'node:crypto';
import { promisify } from 'node:util';

const pbkdf2Async = promisify(pbkdf2);

/** PostgreSQL's default iteration count. */
const ITERATIONS = 4096;

/** `password` must be printable ASCII: SASLprep (which PostgreSQL applies) is then the identity. */
export async function scramSha256Verifier(password: string): Promise<string> {
  if (!/^[\x20-\x7e]+$/.test(password)) throw new Error('SCRAM verifier: password must be printable ASCII');
  const salt = randomBytes(16);
  const salted = await pbkdf2Async(password, salt, ITERATIONS, 32, 'sha256');
  const hmac = (key: Buffer, text: string) => createHmac('sha256', key).update(text).digest();
  const storedKey = createHash('sha256').update(hmac(salted, 'Client Key')).digest();
  const serverKey = hmac(salted, 'Server Key');
  const b64 = (b: Buffer) => b.toString('base64');
  return `SCRAM-SHA-256$${ITERATIONS}:${b64(salt)}$${b64(storedKey)}:${b64(serverKey)}`;
}
