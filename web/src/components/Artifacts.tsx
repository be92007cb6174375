/**
 * A job's artifacts on its page: the patterns it asked for and, once it has run, the files it
 * kept, each with its size and a download button. The list is read again whenever the job's
 * state changes (the page follows the job on the stream), so it appears when the job ends.
 *
 * The API wants the token in a header, which a plain link cannot send: the button fetches the
 * file with it and hands the browser the bytes as a blob to save (artifacts are at most
 * artifacts.maxBytesPerJob per run, 100 MiB by default, so holding one in memory is fine). A
 * token in the URL would end up in history and proxy logs.
 */
import { useEffect, useId, useState } from 'react';
import { api, ApiError } from '../api.js';
import { formatBytes, formatDateTime, formatWhen } from '../format.js';
import { isFinished, type ArtifactView, type Job } from '../types.js';
import { ErrorAlert, Loading, TableWrap } from './Status.js';

/** How long a blob's URL is kept after its download began (the browser reads it meanwhile). */
const BLOB_URL_MS = 60_000;

const baseName = (name: string): string => name.slice(name.lastIndexOf('/') + 1);

export function Artifacts({ job }: { job: Job }) {
  const id = useId();
  const [artifacts, setArtifacts] = useState<ArtifactView[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const asked = job.artifacts.length > 0;
  const finished = isFinished(job.state);

  // Kept files exist only once the job has run; read them again at each change of state.
  useEffect(() => {
    if (!asked || !finished) return;
    const abort = new AbortController();
    api.artifacts(job.id, abort.signal).then(
      (list) => {
        setArtifacts(list);
        setError(null);
      },
      (e: unknown) => {
        if (!abort.signal.aborted) setError(e instanceof ApiError ? e.message : String(e));
      },
    );
    return () => abort.abort();
  }, [job.id, job.state, asked, finished]);

  let body;
  if (!asked) body = <p className="muted">None asked for.</p>;
  else if (!finished) body = <p className="muted">Kept when the job has run: {job.artifacts.join(', ')}</p>;
  else if (artifacts === null) body = error ? null : <Loading what="the artifacts" />;
  else if (artifacts.length === 0)
    body = <p className="muted">No file matched {job.artifacts.join(', ')}, or they have expired.</p>;
  else
    body = (
      <TableWrap>
        <table className="table compact">
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col" className="num">
                Size
              </th>
              <th scope="col">Kept</th>
              <th scope="col">File</th>
            </tr>
          </thead>
          <tbody>
            {artifacts.map((a) => (
              <tr key={`${a.attempt}/${a.name}`}>
                <td>
                  <code>{a.name}</code>
                  {job.attempts > 0 && <span className="muted"> (attempt {a.attempt})</span>}
                </td>
                <td className="num">{formatBytes(a.size)}</td>
                <td>
                  <time dateTime={a.createdAt} title={formatDateTime(a.createdAt)}>
                    {formatWhen(a.createdAt)}
                  </time>
                </td>
                <td>
                  <DownloadButton jobId={job.id} artifact={a} onError={setError} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </TableWrap>
    );

  return (
    <section aria-labelledby={id} className="card">
      <h2 id={id}>Artifacts</h2>
      {body}
      {error && <ErrorAlert>{error}</ErrorAlert>}
    </section>
  );
}

function DownloadButton({
  jobId,
  artifact,
  onError,
}: {
  jobId: number;
  artifact: ArtifactView;
  onError: (message: string | null) => void;
}) {
  const [busy, setBusy] = useState(false);
  const download = async () => {
    setBusy(true);
    onError(null);
    try {
      const blob = await api.artifactBlob(jobId, artifact);
      const url = URL.createObjectURL(blob);
      const link = document.createElement('a');
      link.href = url;
      link.download = baseName(artifact.name);
      document.body.append(link);
      link.click();
      link.remove();
      window.setTimeout(() => URL.revokeObjectURL(url), BLOB_URL_MS);
    } catch (e) {
      onError(e instanceof ApiError ? e.message : String(e));
    } finally {
      setBusy(false);
    }
  };
  return (
    <button
      type="button"
      className="button-quiet"
      disabled={busy}
      aria-label={`Download ${artifact.name}`}
      onClick={() => void download()}
    >
      {busy ? 'Downloading…' : 'Download'}
    </button>
  );
}
