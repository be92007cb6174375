/**
 * A job's private /tmp, and its /dev/shm, each a tmpfs of this size unless configured (`tmpSize`
 * on a local factory, `berth agent --tmp-size`): docs/SECURITY.md, "Namespaces". Its pages count
 * against the job's memory group, so a job with a memory request is held to that first.
 */
export const DEFAULT_TMP_BYTES = 2 ** 30;
