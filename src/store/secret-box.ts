/**
 * Secrets berth must give back in the clear to use them (a project's registry password), kept
 * sealed: AES-256-GCM (node:crypto), a random 96-bit nonce each, authenticated together with what
 * the secret belongs to (`context`: a project and a registry), so that a sealed value copied to
 * another row does not open there. Written `v1.NONCE.TAG.CIPHERTEXT`, base64url.
 *
 * The key is 32 random bytes in a file only the server reads: `secretKeyFile` in berth.yaml, or
 * DATA_DIR/secret.key, made at first need. A copy of the database, or a backup of it, holds no
 * secret in the clear; with the key file too, it does — keep them apart (docs/DEPLOYMENT.md).
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { closeSync, existsSync, fstatSync, openSync, readFileSync, writeSync } from 'node:fs';

const ALGORITHM = 'aes-256-gcm';
const KEY_BYTES = 32;
const NONCE_BYTES = 12;

/** The key file is missing, unreadable, the wrong size, or readable by others. */
export class SecretKeyError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SecretKeyError';
  }
}

/** A sealed value that does not open: another key, another context, or changed. */
export class SealedValueError extends Error {
  constructor() {
    super('a sealed secret did not open: sealed with another key, for another owner, or changed');
    this.name = 'SealedValueError';
  }
}

export class SecretBox {
  private constructor(private readonly key: Buffer) {}

  /**
   * The box of the key in `path`; with `create`, a new key is made there first (0600, never
   * overwritten) when there is none. Refuses a key file others may read or write.
   */
  static open(path: string, create: boolean): SecretBox {
    if (create && !existsSync(path)) {
      let fd: number;
      try {
        fd = openSync(path, 'wx', 0o600); // exclusive: a replica racing us keeps its own
        writeSync(fd, randomBytes(KEY_BYTES).toString('base64') + '\n');
        closeSync(fd);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      }
    }
    let text: string;
    let fd: number;
    try {
      fd = openSync(path, 'r');
    } catch (e) {
      throw new SecretKeyError(`${path}: ${(e as Error).message}`);
    }
    try {
      const mode = fstatSync(fd).mode & 0o777;
      if ((mode & 0o077) !== 0)
        throw new SecretKeyError(
          `${path}: mode ${mode.toString(8).padStart(4, '0')} lets others read or write the key: chmod 600 it`,
        );
      text = readFileSync(fd, 'utf8').trim();
    } finally {
      closeSync(fd);
    }
    const key = Buffer.from(text, 'base64');
    if (key.length !== KEY_BYTES)
      throw new SecretKeyError(`${path}: not a key (${KEY_BYTES} bytes, base64): it holds ${key.length}`);
    return new SecretBox(key);
  }

  /** `text` sealed for `context` (what it belongs to). */
  seal(text: string, context: string): string {
    const nonce = randomBytes(NONCE_BYTES);
    const cipher = createCipheriv(ALGORITHM, this.key, nonce);
    cipher.setAAD(Buffer.from(context, 'utf8'));
    const body = Buffer.concat([cipher.update(text, 'utf8'), cipher.final()]);
    const parts = [nonce, cipher.getAuthTag(), body].map((b) => b.toString('base64url'));
    return ['v1', ...parts].join('.');
  }

  /** What `sealed` holds, if it was sealed with this key for `context`; a SealedValueError otherwise. */
  unseal(sealed: string, context: string): string {
    const [version, nonce, tag, body] = sealed.split('.');
    if (version !== 'v1' || nonce === undefined || tag === undefined || body === undefined)
      throw new SealedValueError();
    try {
      const decipher = createDecipheriv(ALGORITHM, this.key, Buffer.from(nonce, 'base64url'));
      decipher.setAAD(Buffer.from(context, 'utf8'));
      decipher.setAuthTag(Buffer.from(tag, 'base64url'));
      return Buffer.concat([decipher.update(Buffer.from(body, 'base64url')), decipher.final()]).toString(
        'utf8',
      );
    } catch {
      throw new SealedValueError();
    }
  }
}
