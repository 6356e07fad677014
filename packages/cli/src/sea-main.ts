import { exitQuietlyOnClosedPipe } from './closed-pipe.ts';
import { main } from './main.ts';

/**
 * The entry of gpualert's single executable (tools/build-sea.ts): the whole command line and Node
 * in one CommonJS file, for a GPU host without Node or npm (`gpualert agent` is what it is for).
 * The same as bin.ts, without its top-level await, which CommonJS has not.
 */
exitQuietlyOnClosedPipe();
void main(process.argv).then((code) => {
  process.exitCode = code;
});
