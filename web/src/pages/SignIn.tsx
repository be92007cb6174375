/** Sign in with a token; it is kept for this tab only (sessionStorage). */
import { useEffect, useId, useRef, useState, type FormEvent } from 'react';
import { ApiError, signIn, type Session } from '../api.js';
import { ErrorAlert } from '../components/Status.js';
import { useTitle } from '../hooks.js';
import { Logo } from '../components/Logo.js';

interface Props {
  /** Why the last session ended, if it ended by itself. */
  notice: string | null;
  onSignedIn: (session: Session) => void;
}

export function SignIn({ notice, onSignedIn }: Props) {
  useTitle('Sign in');
  const [token, setToken] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const input = useRef<HTMLInputElement>(null);
  const hintId = useId();

  useEffect(() => {
    if (error) input.current?.select();
  }, [error]);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const t = token.trim();
    if (!t) {
      setError('Enter a token.');
      return;
    }
    setBusy(true);
    setError(null);
    try {
      onSignedIn(await signIn(t));
    } catch (err) {
      setError(err instanceof ApiError ? err.message : 'Signing in failed.');
      setBusy(false);
    }
  };

  return (
    <main className="signin" id="main">
      <div className="signin-card">
        <div className="signin-brand" aria-hidden="true">
          <Logo size={36} />
        </div>
        <h1>Sign in to berth</h1>
        {notice && !error && <p className="notice">{notice}</p>}
        <form onSubmit={(e) => void submit(e)} noValidate>
          <div className="field">
            <label htmlFor="token">Token</label>
            <input
              ref={input}
              id="token"
              name="token"
              type="password"
              autoComplete="current-password"
              spellCheck={false}
              value={token}
              onChange={(e) => setToken(e.target.value)}
              aria-describedby={hintId}
              aria-invalid={error ? true : undefined}
            />
            <p className="hint" id={hintId}>
              An admin gives you one (<code>berth user create</code>); the first admin's is in the
              server&apos;s <code>admin.token</code>. It stays in this tab only.
            </p>
          </div>
          {error && <ErrorAlert>{error}</ErrorAlert>}
          <button type="submit" className="button-primary" disabled={busy}>
            Sign in
          </button>
        </form>
      </div>
    </main>
  );
}
