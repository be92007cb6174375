import { Link, paths } from '../router.js';
import { useTitle } from '../hooks.js';

export function NotFound({ path }: { path: string }) {
  useTitle('Not found');
  return (
    <>
      <h1 tabIndex={-1}>Not found</h1>
      <p>
        There is no page at <code>{path}</code>. Go to the <Link to={paths.overview()}>overview</Link>.
      </p>
    </>
  );
}
