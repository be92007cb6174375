// Entry point of the local agent host process (forked by the local factory).
import { runAgentHost } from './host.js';

runAgentHost();
