import { exitQuietlyOnClosedPipe } from './closed-pipe.ts';
import { main } from './main.ts';

/**
 * The entry of the agent's own single executable (tools/build-sea.ts, `--agent`; the Debian
 * package's /usr/bin/gpualert): `gpualert agent` alone. Its build leaves every other command's
 * code out of the bundle (the engine, the notifier and its console, the remediator's Kubernetes
 * client), so a GPU host starts and holds only what the agent runs.
 */
exitQuietlyOnClosedPipe();
void main(process.argv, new Set(['agent'])).then((code) => {
  process.exitCode = code;
});
