import { runSteadyForProfile } from './tmp-prof-lib.js';
import { counters } from "./tmp-prof-lib.js"; if (process.env.COUNT) counters(); else runSteadyForProfile();
