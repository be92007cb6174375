/**
 * Whether a failure means the store could not be reached (its server restarting, the network
 * down): the API answers 503 and the caller tries again, rather than a 500 for a bug.
 */
export { isStoreUnavailable } from '../store/errors.js';
