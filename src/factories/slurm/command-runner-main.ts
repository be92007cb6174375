// Entry point of the helper process that runs Slurm's commands for a slurm factory (command-runner.ts).
import { serveCommands } from './command-runner.js';

serveCommands();
