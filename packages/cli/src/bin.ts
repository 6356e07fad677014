import { exitQuietlyOnClosedPipe } from './closed-pipe.ts';
import { main } from './main.ts';

exitQuietlyOnClosedPipe();
process.exitCode = await main(process.argv);
